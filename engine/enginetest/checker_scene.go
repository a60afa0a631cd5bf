package enginetest

// sceneRuns is how many times a directed schedule (checkConfig.scene) runs
// before the seeds: each run opens its window once.
const sceneRuns = 3

// queueScene is a directed schedule for the fair name 0: client 0 takes it
// and frees it after two base ttls, client 1 queues a ghost waiter (a fair
// entry that is never taken) behind it, and client 2 asks, every tenth of
// a base ttl from just before the release on, for a TryAcquire. The lock
// freed by the release is kept for the ghost (engine.ReserveTTL): a
// newcomer granted in that window skipped the queue. Random seeds open
// that window only where a ghost happens to queue behind a holder whose
// release a newcomer follows closely; here every run opens it.
func queueScene(g genConfig) schedule {
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
	return s
}
