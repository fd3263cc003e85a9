package s3fake_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// TestFakeClock checks that all three server times follow the fake clock: the
// Date header, Last-Modified of GET and LastModified of LIST. Expiry is judged
// on exactly these, so a test can expire a lease by advancing the clock.
func TestFakeClock(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 500e6, time.UTC)
	clk := s3fake.NewClock(start)
	_, st := startWithStore(t, s3fake.Config{Now: clk.Now})
	ctx := context.Background()
	sec := start.Truncate(time.Second)

	c, err := st.Create(ctx, "1.json", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Date.Equal(sec) {
		t.Errorf("Create Date = %v, want the fake clock's %v", c.Date, sec)
	}
	clk.Advance(90 * time.Second)
	_, g, err := st.Get(ctx, "1.json")
	if err != nil {
		t.Fatal(err)
	}
	if !g.LastModified.Equal(sec) || !g.Date.Equal(sec.Add(90*time.Second)) {
		t.Errorf("Get Meta = %+v, want Last-Modified %v and Date 90s later", g, sec)
	}
	if _, err := st.Update(ctx, "1.json", []byte("b"), c.ETag); err != nil {
		t.Fatal(err)
	}
	l, err := st.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := start.Add(90 * time.Second)
	if len(l.Objects) != 1 || !l.Objects[0].LastModified.Truncate(time.Second).Equal(now.Truncate(time.Second)) || !l.Date.Equal(now.Truncate(time.Second)) {
		t.Errorf("List = %+v, want one object written at %v and Date %v", l, now, now.Truncate(time.Second))
	}
}

func TestNewHandlerAndClose(t *testing.T) {
	h, err := s3fake.NewHandler(s3fake.Config{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if h == nil {
		t.Fatal("nil handler")
	}
	srv, err := s3fake.Start(s3fake.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := http.Get(srv.URL()); err == nil {
		t.Fatal("server still answers after Close")
	}
}

// Start an embedded S3 server, as the demo broker's --embedded-s3 flag does, and
// use it through s3store.
func ExampleStart() {
	srv, err := s3fake.Start(s3fake.Config{}) // a free port on 127.0.0.1, bucket "nodeid"
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	ctx := context.Background()
	st, err := s3store.New(ctx, srv.StoreConfig("nodeid/"))
	if err != nil {
		panic(err)
	}
	if err := st.Check(ctx); err != nil {
		panic(err)
	}
	m, err := st.Create(ctx, "0.json", []byte(`{"schema":1}`))
	if err != nil {
		panic(err)
	}
	_, err = st.Create(ctx, "0.json", []byte(`{"schema":1}`))
	fmt.Println(m.ETag)
	fmt.Println(err)
	// Output:
	// "62bcaa3d74adc8575ed50f3aad17f099"
	// s3store: create 0.json: lease: precondition failed (HTTP 412 PreconditionFailed)
}
