package postgres

// FillSchema fills in the placeholders of a schema's SQL, for the test of
// an upgrade from an older schema (testdata).
func FillSchema(schema, sql string) string { return fill(schema, sql) }

// Channel is the schema's notification channel, for a test that listens
// on it.
func Channel(schema string) string { return channel(schema) }

// V11 reports whether the engine calls version 11's extend, release,
// extend_shared and release_shared now (it met a schema before version
// 12); EndV11 ends that as the passing of v11Recheck does.
func (e *Engine) V11() bool { return e.v11.old() }
func (e *Engine) EndV11()   { e.v11.until.Store(0) }

// V13 reports whether the engine calls version 13's release_shared now
// (it met a schema before version 14); EndV13 ends that as the passing of
// v13Recheck does.
func (e *Engine) V13() bool { return e.v13.old() }
func (e *Engine) EndV13()   { e.v13.until.Store(0) }

// V15 reports whether the engine calls version 15's set_metadata now (it
// met a schema before version 16); EndV15 ends that as the passing of
// v15Recheck does.
func (e *Engine) V15() bool { return e.v15.old() }
func (e *Engine) EndV15()   { e.v15.until.Store(0) }

// V18 reports whether the engine releases a set's names one call each now
// (it met a schema before version 19); EndV18 ends that as the passing of
// v18Recheck does.
func (e *Engine) V18() bool { return e.v18.old() }
func (e *Engine) EndV18()   { e.v18.until.Store(0) }

// V19 reports whether the engine answers a shared lock's ReleaseOnce
// unsupported now (it met a schema before version 20); EndV19 ends that
// as the passing of v19Recheck does.
func (e *Engine) V19() bool { return e.v19.old() }
func (e *Engine) EndV19()   { e.v19.until.Store(0) }
