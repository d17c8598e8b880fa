package intent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The intent-based message of the XDP steering paper's DPPnApp (Data Plane
// Programmability Network Adapter Application; Salva-Garcia et al.,
// "XDP-Based SmartNIC Hardware Performance Acceleration for Next-Generation
// Networks", its Listing 1), format "dppnapp":
//
//	{"Resources": [{"resourceId": "F8A4C949", "encapsulationID1": "4450", "encapsulationType1": "vxlan"},
//	               {"resourceId": "B6E6B2B3", "encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"},
//	               {"resourceId": "5A07C587", "srcIP": "198.18.10.1", "dstPort": "5004"}],
//	 "Action": {"actionType": "INSERT", "actionName": "PRIO_QUEUE", "flow_hash": "...", "rx_queue": "1"},
//	 "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}]}
//
// The resources together describe one flow (here: in VXLAN 4450, in GTP-U
// tunnel 8894D0D4, from 198.18.10.1 to port 5004). edgeplane adds an optional
// "intentId", the fields dstIP, srcPort and protocol, and "cpu" as another
// name for rx_queue (one queue per CPU, as the paper's irq_affinity set-up).
type dppnappDoc struct {
	IntentID  string                       `json:"intentId"`
	Resources []map[string]json.RawMessage `json:"Resources"`
	Action    map[string]json.RawMessage   `json:"Action"`
	Params    []struct {
		Name  string          `json:"paramName"`
		Value json.RawMessage `json:"paramValue"`
	} `json:"Params"`
}

var encapKeyRE = regexp.MustCompile(`^encapsulation(ID|Type)(\d+)$`)

func strictDecode(doc []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func parseDPPnApp(doc []byte) (Intent, error) {
	var d dppnappDoc
	if err := strictDecode(doc, &d); err != nil {
		return Intent{}, badRequest("DPPnApp intent: %v", err)
	}
	in := Intent{ID: d.IntentID, Format: "dppnapp"}
	r := Rule{Active: true}
	s := setter{&r}
	if len(d.Resources) == 0 {
		return Intent{}, badRequest("DPPnApp intent: Resources is empty")
	}
	for i, res := range d.Resources {
		encID := map[string]json.RawMessage{}
		encType := map[string]string{}
		for k, raw := range res {
			v, err := value(raw)
			if err != nil {
				return Intent{}, badRequest("Resources[%d].%s: %v", i, k, err)
			}
			switch k {
			case "resourceId":
				r.Resources = append(r.Resources, v)
			case "srcIP":
				err = s.addr(v, true)
			case "dstIP":
				err = s.addr(v, false)
			case "srcPort":
				err = s.port(v, true)
			case "dstPort":
				err = s.port(v, false)
			case "protocol":
				err = s.proto(v)
			default:
				m := encapKeyRE.FindStringSubmatch(k)
				if m == nil {
					return Intent{}, badRequest("Resources[%d]: unknown field %q (resourceId, encapsulationID<n>, encapsulationType<n>, srcIP, dstIP, srcPort, dstPort, protocol)", i, k)
				}
				if m[1] == "ID" {
					encID[m[2]] = raw
				} else {
					encType[m[2]] = strings.ToLower(v)
				}
			}
			if err != nil {
				return Intent{}, err
			}
		}
		for n, raw := range encID {
			typ, ok := encType[n]
			if !ok {
				return Intent{}, badRequest("Resources[%d]: encapsulationID%s has no encapsulationType%s", i, n, n)
			}
			v, _ := value(raw)
			var err error
			switch typ {
			case "vxlan":
				err = s.vni(v)
			case "gtp", "gtpu", "gtp-u":
				err = s.teid(v, len(raw) > 0 && raw[0] != '"')
			default:
				err = badRequest("Resources[%d]: encapsulation type %q is not supported (vxlan, gtp)", i, typ)
			}
			if err != nil {
				return Intent{}, err
			}
			delete(encType, n)
		}
		for n := range encType {
			return Intent{}, badRequest("Resources[%d]: encapsulationType%s has no encapsulationID%s", i, n, n)
		}
	}

	act := map[string]string{}
	for k, raw := range d.Action {
		v, err := value(raw)
		if err != nil {
			return Intent{}, badRequest("Action.%s: %v", k, err)
		}
		act[k] = v
	}
	for k := range act {
		switch k {
		case "actionType", "actionName", "flow_hash", "rx_queue", "cpu":
		default:
			return Intent{}, badRequest("Action: unknown field %q (actionType, actionName, flow_hash, rx_queue, cpu)", k)
		}
	}
	if t := act["actionType"]; t != "" && t != "INSERT" {
		return Intent{}, badRequest("Action.actionType %q: POST inserts (INSERT); delete with DELETE /v1/intents/{id}", t)
	}
	if act["actionName"] != "PRIO_QUEUE" {
		return Intent{}, badRequest("Action.actionName %q is not supported (PRIO_QUEUE)", act["actionName"])
	}
	q, cpu := act["rx_queue"], act["cpu"]
	if q != "" && cpu != "" && q != cpu {
		return Intent{}, badRequest("Action: rx_queue %s and cpu %s disagree", q, cpu)
	}
	if q == "" {
		q = cpu
	}
	var err error
	if r.CPU, err = parseCPU(q); err != nil {
		return Intent{}, err
	}
	if fh := act["flow_hash"]; fh != "" {
		want, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(fh), "0x"), 16, 32)
		if err != nil {
			return Intent{}, badRequest("Action.flow_hash %q is not a 32-bit hex value", fh)
		}
		if r.Fields != 0 && uint32(want) != r.Hash() {
			return Intent{}, badRequest("Action.flow_hash %s does not match the resources, whose hash is %08X", fh, r.Hash())
		}
	}
	for i, p := range d.Params {
		v, err := value(p.Value)
		if err != nil {
			return Intent{}, badRequest("Params[%d]: %v", i, err)
		}
		switch p.Name {
		case "interfaceName":
			in.Interface = v
		default:
			return Intent{}, badRequest("Params[%d]: unknown paramName %q (interfaceName)", i, p.Name)
		}
	}
	in.Rules = []Rule{r}
	return in, nil
}

// FlowHashHex formats a hash the way the paper writes flow_hash.
func FlowHashHex(h uint32) string { return fmt.Sprintf("%08X", h) }
