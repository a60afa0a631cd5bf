package postgres

// FillSchema fills in the placeholders of a schema's SQL, for the test of
// an upgrade from an older schema (testdata).
func FillSchema(schema, sql string) string { return fill(schema, sql) }

// Channel is the schema's notification channel, for a test that listens
// on it.
func Channel(schema string) string { return channel(schema) }
