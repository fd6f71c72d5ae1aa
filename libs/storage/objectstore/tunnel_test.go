package objectstore_test

import (
	"io"
	"net"
	"net/http"
)

// tunnel serves a CONNECT request: it joins the client's connection with the target's.
func tunnel(w http.ResponseWriter, r *http.Request) {
	dst, err := net.Dial("tcp", r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = dst.Close()
		http.Error(w, "no hijacking", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
	src, _, err := hj.Hijack()
	if err != nil {
		_ = dst.Close()
		return
	}
	go func() { _, _ = io.Copy(dst, src); _ = dst.Close() }()
	go func() { _, _ = io.Copy(src, dst); _ = src.Close() }()
}
