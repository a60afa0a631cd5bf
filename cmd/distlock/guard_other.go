//go:build !unix

package main

import "time"

// guardArg is the hidden first argument of the guard process (unix only).
const guardArg = "__distlock-guard"

// guard does nothing here: distlock runs no command on this system.
type guard struct{}

func (a *app) startGuard(string, time.Duration) *guard    { return nil }
func (g *guard) arm(*child, time.Duration, time.Duration) {}
func (g *guard) tell(time.Duration, time.Duration)        {}
func (g *guard) stopping()                                {}
func (g *guard) standDown()                               {}
func runGuard([]string) int                               { return exitUsage }
