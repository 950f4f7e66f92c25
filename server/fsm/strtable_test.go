package fsm

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestStrTableModel: random inserts (of values and negative entries),
// removals and evictions, checked
// against a Go map after every step: each key the model has is found with
// its value, each it lacks is not, and the count agrees. The table grows
// through several sizes and wraps its probes around the end, and removals
// shift entries back across the wrap.
func TestStrTableModel(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	tab := newStrTable()
	model := map[string]string{}
	key := func() string { return fmt.Sprint("k", r.Intn(3000)) }
	check := func(step int) {
		if tab.len() != len(model) {
			t.Fatalf("step %d: %d entries, model %d", step, tab.len(), len(model))
		}
		for k, want := range model {
			v, absent, ok := tab.get([]byte(k))
			if want == "<absent>" {
				if !ok || !absent || v != nil {
					t.Fatalf("step %d: %s = %q %v %v, want a negative entry", step, k, v, absent, ok)
				}
				continue
			}
			if !ok || absent || string(v) != want {
				t.Fatalf("step %d: %s = %q %v, want %q", step, k, v, ok, want)
			}
		}
		for i := range 50 {
			k := fmt.Sprint("absent", step, i)
			if _, _, ok := tab.get([]byte(k)); ok || tab.findString(k) >= 0 {
				t.Fatalf("step %d: found %s", step, k)
			}
		}
	}
	for step := range 20000 {
		k := key()
		switch op := r.Intn(10); {
		case op < 6:
			if _, ok := model[k]; !ok {
				v := fmt.Sprint("v", step)
				switch step % 3 {
				case 0:
					tab.insert([]byte(k), []byte(v), false)
				case 1:
					tab.insertString(k, []byte(v))
				default:
					tab.insert([]byte(k), []byte(v), true)
					v = "<absent>"
				}
				model[k] = v
			}
		case op < 9:
			i := tab.findString(k)
			if _, ok := model[k]; ok != (i >= 0) {
				t.Fatalf("step %d: findString(%s) = %d, model has it: %v", step, k, i, ok)
			}
			if i >= 0 {
				kl, vl := tab.remove(i)
				if want := len(model[k]); kl != len(k) || (vl != want && !(model[k] == "<absent>" && vl == 0)) {
					t.Fatalf("step %d: removed sizes %d, %d", step, kl, vl)
				}
				delete(model, k)
			}
		default:
			if tab.len() > 0 {
				before := tab.len()
				tab.evictOne()
				for mk := range model {
					if _, _, ok := tab.get([]byte(mk)); !ok {
						delete(model, mk)
					}
				}
				if len(model) != before-1 {
					t.Fatalf("step %d: eviction removed %d entries", step, before-len(model))
				}
			}
		}
		if step%500 == 0 || step > 19900 {
			check(step)
		}
	}
	if len(tab.slots) < 2*strTableMin {
		t.Fatalf("the table never grew: %d slots", len(tab.slots))
	}
}
