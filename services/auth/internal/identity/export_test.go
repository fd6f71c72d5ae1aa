package identity

// SetVerify replaces the password verification of s (tests block or count hashing with it).
func SetVerify(s *Service, f func(encoded, password string, current HashParams) (ok, needsRehash bool, err error)) {
	s.verify = f
}

// GateAdmitted is how many logins hold or wait for an argon2id slot of s.
func GateAdmitted(s *Service) int {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	return s.gate.admitted
}
