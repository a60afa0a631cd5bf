package enginetest

// sceneRuns is how many times a directed schedule (checkConfig.scenes) runs
// before the seeds: each run opens its window once.
const sceneRuns = 3

// scene builds a directed schedule: one made to open a window that random
// seeds open rarely. It reports false when the engine (g) lacks what the
// schedule needs; the scene is then not run.
type scene func(g genConfig) (schedule, bool)

// queueScene is a directed schedule for the fair name 0: client 0 takes it
// and frees it after two base ttls, client 1 queues a ghost waiter (a fair
// entry that is never taken) behind it, and client 2 asks, every tenth of
// a base ttl from just before the release on, for a TryAcquire. The lock
// freed by the release is kept for the ghost (engine.ReserveTTL): a
// newcomer granted in that window skipped the queue. Random seeds open
// that window only where a ghost happens to queue behind a holder whose
// release a newcomer follows closely; here every run opens it. It needs a
// fair engine.
func queueScene(g genConfig) (schedule, bool) {
	b := g.base
	s := schedule{Names: 1, Clients: [][]op{
		{
			{Kind: opTry, Name: 0, TTL: 4 * b},
			{Kind: opRelease, Name: -1, Gap: 2 * b},
		},
		{{Kind: opGhost, Name: 0, TTL: b, Wait: 4 * b, Gap: b / 2}},
	}}
	tries := []op{{Kind: opTry, Name: 0, TTL: b, Gap: 2*b - b/5}}
	for range 12 {
		tries = append(tries, op{Kind: opTry, Name: 0, TTL: b, Gap: b / 10})
	}
	s.Clients = append(s.Clients, tries)
	return s, g.fair
}

// restartScene is a directed schedule for a backend the checker restarts
// (Faults.Restart): client 0 takes name 0 for twenty base ttls, and client
// 1 restarts the backend and then asks for the name three times. A backend
// that forgets its locks when it restarts grants the name while client 0's
// lease is surely live; random seeds show that only where a request for a
// held name follows a restart. It needs Faults.Restart.
func restartScene(g genConfig) (schedule, bool) {
	b := g.base
	return schedule{Names: 1, Clients: [][]op{
		{{Kind: opTry, Name: 0, TTL: 20 * b}},
		{
			{Kind: opRestart, Name: -1, Gap: b / 2},
			{Kind: opTry, Name: 0, TTL: b, Gap: b / 10},
			{Kind: opTry, Name: 0, TTL: b, Gap: b / 2},
			{Kind: opTry, Name: 0, TTL: b, Gap: b / 2},
		},
	}}, g.restarts
}

// lingerScene is a directed schedule for name 0: client 0 takes it for four
// base ttls and keeps it (no release, no renewal), and client 1 asks for a
// TryAcquire 6 times, every half base ttl from 5.5 base ttls on. From the
// lease's ttl plus the timing's slack after client 0's grant (about 5 base
// ttls on the embedded engine) no holder can be live: an engine that keeps
// a lease past its deadline (three times its ttl: 12 base ttls) refuses
// those tries while the name is free, with room for the tries to run
// several base ttls late. Random seeds open that window only where a
// request follows an unreleased lease's expiry closely; here every run
// opens it.
func lingerScene(g genConfig) (schedule, bool) {
	b := g.base
	tries := []op{{Kind: opTry, Name: 0, TTL: b, Gap: 5*b + b/2}}
	for range 5 {
		tries = append(tries, op{Kind: opTry, Name: 0, TTL: b, Gap: b / 2})
	}
	return schedule{Names: 1, Clients: [][]op{
		{{Kind: opTry, Name: 0, TTL: 4 * b}},
		tries,
	}}, true
}
