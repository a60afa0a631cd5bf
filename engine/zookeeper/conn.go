package zookeeper

import (
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// zkConn is the part of the client library's connection the engine uses.
type zkConn interface {
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Children(path string) ([]string, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Delete(path string, version int32) error
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Multi(ops ...any) ([]zk.MultiResponse, error)
	SessionID() int64
	Close()
}

// Requests counts the requests an engine sent to ZooKeeper since it was
// made (Engine.Requests): what each operation costs the ensemble.
type Requests struct {
	// Reads are answered by the member the session is on (a data read, a
	// listing, a watch set).
	Reads int64
	// Writes are transactions, each logged by a quorum of the members
	// before it is answered (a create, a write, a deletion; a multi-op is
	// one).
	Writes int64
}

// Sub returns r minus o: the requests sent between two readings.
func (r Requests) Sub(o Requests) Requests {
	return Requests{Reads: r.Reads - o.Reads, Writes: r.Writes - o.Writes}
}

// Requests returns how many requests of each sort the engine has sent,
// answered or not.
func (e *Engine) Requests() Requests {
	c := e.conn.(*counted)
	return Requests{Reads: c.reads.Load(), Writes: c.writes.Load()}
}

// counted is a connection that counts its requests.
type counted struct {
	zkConn
	reads, writes atomic.Int64
}

func (c *counted) Get(path string) ([]byte, *zk.Stat, error) {
	c.reads.Add(1)
	return c.zkConn.Get(path)
}

func (c *counted) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	c.reads.Add(1)
	return c.zkConn.GetW(path)
}

func (c *counted) Children(path string) ([]string, *zk.Stat, error) {
	c.reads.Add(1)
	return c.zkConn.Children(path)
}

func (c *counted) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	c.reads.Add(1)
	return c.zkConn.ExistsW(path)
}

func (c *counted) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	c.writes.Add(1)
	return c.zkConn.Set(path, data, version)
}

func (c *counted) Delete(path string, version int32) error {
	c.writes.Add(1)
	return c.zkConn.Delete(path, version)
}

func (c *counted) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.writes.Add(1)
	return c.zkConn.Create(path, data, flags, acl)
}

func (c *counted) CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.writes.Add(1)
	return c.zkConn.CreateContainer(path, data, flags, acl)
}

func (c *counted) Multi(ops ...any) ([]zk.MultiResponse, error) {
	c.writes.Add(1)
	return c.zkConn.Multi(ops...)
}
