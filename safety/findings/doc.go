// Package findings holds, as tests, what the safety lab found out about
// distlock that its documentation should say (see docs/SAFETY.md). Each test
// reproduces one finding deterministically, without the lab's scheduler.
package findings
