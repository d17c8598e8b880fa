package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"edgeplane/control/internal/api"
)

// runBNG is the operator's CLI of the BNG control plane, a client of its
// REST API:
//
//	edgeplane bng [--api unix:/run/edgeplane/bng-cp.sock] sessions [--json] [type=pppoe user=.. mac=.. port=.. state=..]
//	edgeplane bng show ID
//	edgeplane bng clear ID | clear user=NAME | clear mac=MAC | clear all
//	edgeplane bng profile ID NAME
//	edgeplane bng stats | counters
func runBNG(args []string) error {
	fs := flag.NewFlagSet("bng", flag.ExitOnError)
	addr := fs.String("api", "unix:/run/edgeplane/bng-cp.sock", "the control plane's API: unix:/path or tcp:host:port")
	tokenFile := fs.String("token-file", "", "bearer token file (tcp listeners)")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	fs.Parse(args)
	rest := fs.Args()
	if len(rest) == 0 {
		return errors.New("usage: edgeplane bng [--api ADDR] sessions|show|clear|profile|stats|counters")
	}
	c, err := newAPIClient(*addr, *tokenFile)
	if err != nil {
		return err
	}
	switch rest[0] {
	case "sessions":
		q := url.Values{}
		for _, kv := range rest[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("filter %q: want key=value", kv)
			}
			q.Set(k, v)
		}
		var out struct {
			Sessions []map[string]any `json:"sessions"`
			Count    int              `json:"count"`
		}
		raw, err := c.do("GET", "/v1/bng/sessions?"+q.Encode(), nil, &out)
		if err != nil {
			return err
		}
		if *asJSON {
			os.Stdout.Write(raw)
			return nil
		}
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTYPE\tSTATE\tPORT\tLINE\tMAC\tUSER\tIPV4\tIPV6\tPROFILE")
		for _, s := range out.Sessions {
			line := s["line"].(map[string]any)
			l := "untagged"
			if st, ok := line["s_tag"]; ok {
				l = fmt.Sprintf("%v.%v", st, line["c_tag"])
			} else if ct, ok := line["c_tag"]; ok {
				l = fmt.Sprint(ct)
			}
			fmt.Fprintf(tw, "%v\t%v\t%v\t%v\t%s\t%v\t%v\t%v\t%v\t%v\n", s["id"], s["type"], s["state"], s["port"], l,
				s["mac"], str(s["user"]), str(s["ipv4"]), str(s["ipv6_block"]), str(s["profile"]))
		}
		tw.Flush()
		fmt.Printf("%d sessions\n", out.Count)
		return nil
	case "show":
		if len(rest) != 2 {
			return errors.New("usage: edgeplane bng show ID")
		}
		raw, err := c.do("GET", "/v1/bng/sessions/"+url.PathEscape(rest[1]), nil, nil)
		if err == nil {
			os.Stdout.Write(raw)
		}
		return err
	case "clear":
		if len(rest) != 2 {
			return errors.New("usage: edgeplane bng clear ID | key=value | all")
		}
		path := ""
		switch k, v, ok := strings.Cut(rest[1], "="); {
		case rest[1] == "all":
			path = "/v1/bng/sessions?all=true"
		case ok:
			path = "/v1/bng/sessions?" + url.Values{k: {v}}.Encode()
		default:
			path = "/v1/bng/sessions/" + url.PathEscape(rest[1])
		}
		var out struct {
			Cleared int `json:"cleared"`
		}
		if _, err := c.do("DELETE", path, nil, &out); err != nil {
			return err
		}
		fmt.Printf("cleared %d\n", out.Cleared)
		return nil
	case "profile":
		if len(rest) != 3 {
			return errors.New("usage: edgeplane bng profile ID NAME")
		}
		body, _ := json.Marshal(map[string]string{"profile": rest[2]})
		raw, err := c.do("PUT", "/v1/bng/sessions/"+url.PathEscape(rest[1])+"/profile", body, nil)
		if err == nil {
			os.Stdout.Write(raw)
		}
		return err
	case "stats", "counters":
		raw, err := c.do("GET", "/v1/bng/"+rest[0], nil, nil)
		if err == nil {
			os.Stdout.Write(raw)
		}
		return err
	}
	return fmt.Errorf("unknown command %q", rest[0])
}

func str(v any) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(v)
}

type apiClient struct {
	hc    *http.Client
	base  string
	token string
}

func newAPIClient(addr, tokenFile string) (*apiClient, error) {
	c := &apiClient{hc: &http.Client{Timeout: 30 * time.Second}}
	if tokenFile != "" {
		t, err := api.ReadToken(tokenFile)
		if err != nil {
			return nil, err
		}
		c.token = string(t)
	}
	switch {
	case strings.HasPrefix(addr, "unix:"):
		path := addr[5:]
		c.hc.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}
		c.base = "http://bng-cp"
	case strings.HasPrefix(addr, "tcp:"):
		c.base = "http://" + addr[4:]
	default:
		c.base = "http://" + addr
	}
	return c, nil
}

func (c *apiClient) do(method, path string, body []byte, out any) ([]byte, error) {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var p struct {
			Error string `json:"error"`
		}
		json.Unmarshal(raw, &p)
		return raw, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, p.Error)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return raw, err
		}
	}
	return raw, nil
}
