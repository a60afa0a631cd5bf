package peers

import (
	"context"
	"errors"
	"sync"
)

// separate is n independent instances of one Variant: worker i uses
// instance i mod n.
type separate struct{ lks []Locker }

// Separate builds n independent instances of v for t, as n processes would
// have them: each has its own library instance and its own go-redis or
// rueidis client(s), hence its own connections (and, for distlock, its own
// engine and pub/sub connection). Every instance counts its requests into
// t.Counter. The Locker is a PerWorker: ForWorker(i) is instance i mod n; its
// own Acquire and Waiters use instance 0.
func Separate(v Variant, t Target, n int) (Locker, error) {
	n = max(n, 1)
	per := t
	per.Workers = max((t.Workers+n-1)/n, 1)
	s := &separate{}
	for range n {
		lk, err := v.New(per)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		s.lks = append(s.lks, lk)
	}
	return s, nil
}

func (s *separate) Acquire(ctx context.Context, name string) (Held, error) {
	return s.lks[0].Acquire(ctx, name)
}

// ForWorker implements PerWorker.
func (s *separate) ForWorker(i int) Locker { return s.lks[i%len(s.lks)] }

// Waiters implements Inspector when the instances do.
func (s *separate) Waiters(ctx context.Context, name string) (int, error) {
	in, ok := s.lks[0].(Inspector)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	return in.Waiters(ctx, name)
}

// Close closes every instance, concurrently.
func (s *separate) Close() error {
	errs := make([]error, len(s.lks))
	var wg sync.WaitGroup
	for i, lk := range s.lks {
		wg.Go(func() { errs[i] = lk.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
