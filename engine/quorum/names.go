package quorum

import "github.com/distlock/distlock/engine"

// CheckName implements engine.NameChecker: a name must suit every node.
func (e *Engine) CheckName(name string) error {
	for _, n := range e.nodes {
		if err := engine.CheckName(n.eng, name); err != nil {
			return err
		}
	}
	return nil
}
