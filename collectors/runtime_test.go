package collectors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

func TestParseCapEff(t *testing.T) {
	// NET_ADMIN (12) + NET_RAW (13), what the collector Pod is given.
	c := ParseCapEff("0000000000003000")
	if c.Error != "" || !slices.Equal(c.Effective, []string{"CAP_NET_ADMIN", "CAP_NET_RAW"}) {
		t.Fatalf("got %+v", c)
	}
	if c := ParseCapEff("zz"); c.Error == "" {
		t.Fatal("want an error for a bad mask")
	}
	if c := ParseCapEff("0000000000000000"); len(c.Effective) != 0 {
		t.Fatalf("empty mask gave %v", c.Effective)
	}
}

func TestClassifyNetError(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), collectorapi.ErrClassRefused},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), collectorapi.ErrClassReset},
		{fmt.Errorf("dial: %w", syscall.EHOSTUNREACH), collectorapi.ErrClassUnreachable},
		{context.DeadlineExceeded, collectorapi.ErrClassTimeout},
		{os.ErrDeadlineExceeded, collectorapi.ErrClassTimeout},
		{errors.New("weird"), collectorapi.ErrClassOther},
		{nil, ""},
	}
	for _, c := range cases {
		if got := ClassifyNetError(c.err); got != c.want {
			t.Errorf("%v: got %q want %q", c.err, got, c.want)
		}
	}
}
