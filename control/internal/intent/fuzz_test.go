package intent

import (
	"testing"
)

// FuzzParse: any document is parsed or refused with a 4xx, never a panic,
// and an accepted one names at least one flow field in every rule.
func FuzzParse(f *testing.F) {
	for _, s := range []string{dppListing1, mecRule, mecRule2, `{"Resources":[{"dstPort":"1"}],"Action":{"actionName":"PRIO_QUEUE"}}`,
		`{"trafficRuleId":"x","filterType":"FLOW","trafficFilter":[{"tag":["gtp:1"]}],"action":"PASSTHROUGH"}`, `{}`, `[]`, `{"Resources":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		in, err := Parse(doc)
		if err != nil {
			if status(err) < 400 || status(err) > 499 {
				t.Fatalf("refusal without a 4xx: %v", err)
			}
			return
		}
		for _, r := range in.Rules {
			if r.Fields == 0 {
				t.Fatalf("accepted rule with no field: %s", doc)
			}
		}
	})
}
