package jobsubs

import "testing"

func TestSetsAddAndRemove(t *testing.T) {
	m := Sets[int]{}
	m.Add("a", 1)
	m.Add("a", 2)
	m.Add("b", 1)
	if len(m["a"]) != 2 || len(m["b"]) != 1 {
		t.Fatalf("after adds: %v", m)
	}
	m.Remove("a", 1)
	m.Remove("c", 1) // a job nobody follows: nothing to do
	if _, ok := m["a"][2]; !ok || len(m["a"]) != 1 {
		t.Fatalf("after removing a/1: %v", m)
	}
	m.Remove("a", 2)
	m.Remove("b", 1)
	if len(m) != 0 {
		t.Fatalf("empty sets are kept: %v", m)
	}
}
