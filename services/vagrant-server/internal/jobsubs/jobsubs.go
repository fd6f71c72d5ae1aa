// Package jobsubs keeps the subscribers of each job: the wake-ups for a job's output
// (joboutput) and for its state (jobqueue) are both a set of subscribers per job id.
package jobsubs

// Sets is a set of subscribers per job id. It holds no lock: its owner guards it with its
// own, as it does the rest of what the subscribers share.
type Sets[S comparable] map[string]map[S]struct{}

// Add puts s in job's set.
func (m Sets[S]) Add(job string, s S) {
	if m[job] == nil {
		m[job] = map[S]struct{}{}
	}
	m[job][s] = struct{}{}
}

// Remove takes s out of job's set, and the set out when it is left empty, so that a job
// nobody follows any more costs nothing.
func (m Sets[S]) Remove(job string, s S) {
	if set := m[job]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(m, job)
		}
	}
}
