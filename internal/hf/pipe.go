package hf

import (
	"io"
	"sync"
)

// Download throughput: receiving, writing and hashing each cost about
// the same on loopback, so they run as three pipelined stages on
// separate buffers instead of one after another.
const (
	pipeBufSize = 1 << 20
	pipeBufs    = 6
	pipeMinFill = 256 << 10 // fill a buffer this far before handing it on
)

var pipeBufPool = sync.Pool{New: func() any { b := make([]byte, pipeBufSize); return &b }}

// pipeResult says how a pipelined copy ended.
type pipeResult struct {
	n        int64 // bytes read, written and hashed
	readErr  error // from src, io.EOF at a clean end
	writeErr error // from dst
}

// pipeCopy reads src into buffers, writes them to dst and hashes them into
// h, the three stages running concurrently. onRead is called in the
// caller's goroutine after each buffer is read, with the running total.
// When it returns, every byte counted in n has been written and hashed.
func pipeCopy(dst io.Writer, h io.Writer, src io.Reader, onRead func(total int64)) pipeResult {
	free := make(chan *[]byte, pipeBufs)
	bufs := make([]*[]byte, pipeBufs)
	for i := range bufs {
		bufs[i] = pipeBufPool.Get().(*[]byte)
		free <- bufs[i]
	}
	defer func() {
		for _, b := range bufs {
			pipeBufPool.Put(b)
		}
	}()
	type chunk struct {
		buf *[]byte
		n   int
	}
	toWrite := make(chan chunk, pipeBufs)
	toHash := make(chan chunk, pipeBufs)
	var res pipeResult
	var written int64
	writeFailed := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // writer
		defer wg.Done()
		defer close(toHash)
		for c := range toWrite {
			if res.writeErr == nil {
				if _, err := dst.Write((*c.buf)[:c.n]); err != nil {
					res.writeErr = err
					close(writeFailed)
				} else {
					written += int64(c.n)
					toHash <- c
					continue
				}
			}
			free <- c.buf
		}
	}()
	go func() { // hasher
		defer wg.Done()
		for c := range toHash {
			h.Write((*c.buf)[:c.n])
			free <- c.buf
		}
	}()
	var read int64
loop:
	for {
		var b *[]byte
		select {
		case b = <-free:
		case <-writeFailed:
			break loop
		}
		filled := 0
		var err error
		for filled < pipeMinFill && err == nil {
			var n int
			n, err = src.Read((*b)[filled:])
			filled += n
		}
		if filled > 0 {
			read += int64(filled)
			toWrite <- chunk{b, filled}
			if onRead != nil {
				onRead(read)
			}
		} else {
			free <- b
		}
		if err != nil {
			res.readErr = err
			break
		}
	}
	close(toWrite)
	wg.Wait()
	res.n = written
	return res
}
