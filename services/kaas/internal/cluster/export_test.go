package cluster

// TestRules are the rules the external tests (package cluster_test) check requests with.
var TestRules = testRules
