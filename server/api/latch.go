package api

// LatchSetRequest is the body of POST /v1/latches/{name}/set: set the
// countdown latch's count (at least 1) when it is zero.
type LatchSetRequest struct {
	Count int64 `json:"count"`
}

// LatchSetResponse answers POST /v1/latches/{name}/set: whether the count
// was set (false: the latch was counting already and kept its count).
type LatchSetResponse struct {
	Name string `json:"name"`
	Set  bool   `json:"set"`
}

// LatchCountDownRequest is the body of POST /v1/latches/{name}/countdown.
// ID identifies the call: a copy sent again (to this server or another of
// the same engine) counts nothing.
type LatchCountDownRequest struct {
	ID string `json:"id"`
}

// LatchResponse answers GET /v1/latches/{name} and POST
// /v1/latches/{name}/countdown: the latch's count (0: not counting).
type LatchResponse struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}
