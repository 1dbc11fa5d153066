package load_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/load"
)

func TestParseDelay(t *testing.T) {
	for in, want := range map[string]load.Delay{
		``:                          {},
		`null`:                      {},
		`""`:                        {},
		`"2s"`:                      load.Fixed(2 * time.Second),
		`{"fixed": "500ms"}`:        load.Fixed(500 * time.Millisecond),
		`{"uniform": ["1s", "4s"]}`: load.Uniform(time.Second, 4*time.Second),
		`{"normal": {"mean": "2s", "stddev": "1s"}}`: load.Normal(2*time.Second, time.Second),
		`{"samples": ["1s", "3s"]}`:                  load.Samples(time.Second, 3*time.Second),
	} {
		got, err := load.ParseDelay([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		if in != "" {
			// The JSON form reads back as the same distribution.
			b, err := json.Marshal(got)
			require.NoError(t, err)
			var back load.Delay
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, got, back, string(b))
		}
	}
	for in, msg := range map[string]string{
		`"soon"`:                             `"soon" is not a duration`,
		`"-1s"`:                              `"-1s" is negative`,
		`{"uniform": ["4s", "1s"]}`:          `MIN <= MAX`,
		`{"uniform": ["1s"]}`:                `MIN <= MAX`,
		`{"samples": []}`:                    `at least one`,
		`{"fixed": "1s", "samples": ["1s"]}`: `exactly one`,
		`{"gamma": 1}`:                       `unknown field "gamma"`,
		`{"normal": {"mean": "x"}}`:          `normal`,
	} {
		_, err := load.ParseDelay([]byte(in))
		assert.ErrorContains(t, err, msg, in)
	}
}

func TestDelaySample(t *testing.T) {
	u := load.Uniform(time.Second, 4*time.Second)
	s := load.Samples(time.Second, 3*time.Second)
	n := load.Normal(time.Second, 10*time.Second)
	for range 1000 {
		d := u.Sample()
		assert.True(t, d >= time.Second && d <= 4*time.Second, d)
		assert.Contains(t, []time.Duration{time.Second, 3 * time.Second}, s.Sample())
		assert.GreaterOrEqual(t, n.Sample(), time.Duration(0)) // cut at zero
	}
	assert.Equal(t, 2*time.Second, load.Fixed(2*time.Second).Sample())
	assert.True(t, load.Delay{}.IsZero())
	assert.False(t, u.IsZero())
}

func TestDelayWaitHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		assert.ErrorIs(t, load.Fixed(time.Hour).Wait(ctx), context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start))
		start = time.Now()
		require.NoError(t, load.Uniform(2*time.Second, 2*time.Second).Wait(context.Background()))
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}
