package spool

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The power-loss model test: random sequences of operations (Appends,
// Loads, Acks, time passing so that the syncer runs, Close and Open again)
// on a spool over a crashFS, against an ideal queue; after every step, and
// before every operation of the file system inside a step, the power is
// lost: several images of what the disk may then hold (crashFS) are each
// opened by a fresh Spool, which must
//
//   - open, never refuse, never hang;
//   - hand every record that the contract says was on the disk (written
//     more than Options.Sync ago, or before Append returned with Sync 0,
//     or before a Close), and not acknowledged on the disk, exactly once,
//     in order;
//   - hand no record whose acknowledgement was on the disk (acknowledged
//     more than Options.Sync ago, or before Ack returned with Sync 0, or
//     before a Close), and nothing else: no record never appended, no
//     bytes that are not a record's;
//   - count in Stats.Bytes what its files hold, and work on: a record
//     appended, everything acknowledged and the spool closed, a reopen
//     finds nothing.
//
// Every image is of one sequence's seed: a failure prints it, and
// SPOOL_POWERLOSS_SEED=<seed> SPOOL_POWERLOSS_SEQUENCES=1 runs that
// sequence alone. SPOOL_POWERLOSS_SEQUENCES=n runs n sequences (a long
// run: 2,000 take some minutes); SPOOL_POWERLOSS_SEED=random draws the
// first seed from the clock.
const (
	powerLossSeedEnv      = "SPOOL_POWERLOSS_SEED"
	powerLossSequencesEnv = "SPOOL_POWERLOSS_SEQUENCES"
)

// The default run: short enough for make test under -race on a loaded
// 2-core machine.
const (
	powerLossSequences = 32
	powerLossSteps     = 36
)

func TestPowerLoss(t *testing.T) {
	first, n := uint64(1), powerLossSequences
	if s := os.Getenv(powerLossSeedEnv); s == "random" {
		first = uint64(time.Now().UnixNano())
	} else if s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", powerLossSeedEnv, err)
		}
		first = v
	}
	if s := os.Getenv(powerLossSequencesEnv); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s: %q is not a positive count", powerLossSequencesEnv, s)
		}
		n = v
	}
	var total plCounts
	for i := range n {
		seed := first + uint64(i)
		var c plCounts
		synctest.Test(t, func(t *testing.T) {
			c = runPowerLoss(t, seed, powerLossSteps)
		})
		total.add(c)
		if t.Failed() {
			t.Fatalf("sequence of seed %d failed: rerun it with %s=%d %s=1", seed, powerLossSeedEnv, seed, powerLossSequencesEnv)
		}
	}
	t.Logf("%d sequences (seeds %d to %d) of %d steps: %s", n, first, first+uint64(n)-1, powerLossSteps, total)
}

// plCounts are what a run did, for the log.
type plCounts struct {
	sequences, steps, points, images      int
	appended, acked, recovered, corrupt   int
	fsyncs, dirSyncs, mapped, restarts    int
	stepPoints, opPoints, differingImages int
}

func (c *plCounts) add(o plCounts) {
	c.sequences += o.sequences
	c.steps += o.steps
	c.points += o.points
	c.stepPoints += o.stepPoints
	c.opPoints += o.opPoints
	c.images += o.images
	c.differingImages += o.differingImages
	c.appended += o.appended
	c.acked += o.acked
	c.recovered += o.recovered
	c.corrupt += o.corrupt
	c.fsyncs += o.fsyncs
	c.dirSyncs += o.dirSyncs
	c.mapped += o.mapped
	c.restarts += o.restarts
}

func (c plCounts) String() string {
	return fmt.Sprintf("%d steps; %d crash points (%d after a step, %d before an operation of the file system), %d crash images recovered (%d not the same as the page cache); "+
		"%d records appended, %d acknowledged; %d records recovered, %d damaged ones skipped; %d fsyncs, %d directory syncs; %d sequences mapped; %d clean restarts",
		c.steps, c.points, c.stepPoints, c.opPoints, c.images, c.differingImages, c.appended, c.acked, c.recovered, c.corrupt, c.fsyncs, c.dirSyncs, c.mapped, c.restarts)
}

// plConfig is a sequence's spool.
type plConfig struct {
	opts   Options
	mapped bool
}

func (c plConfig) String() string {
	return fmt.Sprintf("Sync %v, SegmentBytes %d, MaxBytes %d, mapped %v", c.opts.Sync, c.opts.SegmentBytes, c.opts.MaxBytes, c.mapped)
}

// plRec is what the model knows of record i (the payload rec(i)).
type plRec struct {
	// appendSeq is the number of the event its Append returning nil was
	// (0: none), appendAt its time; ackSeq and ackAt the same of the Ack
	// that returned nil for it.
	appendSeq, ackSeq int
	appendAt, ackAt   time.Time
	id                ID
	// ackFailSeq is the event of an Ack of it that returned an error:
	// done for the process from then, it may come back after a restart
	// or not (Spool.Ack).
	ackFailSeq int
}

// plModel is the ideal queue, and what the contract says is on the disk.
// Events (an Append, an Ack or a Close returning) are numbered from 1 as
// they end.
type plModel struct {
	cfg      plConfig
	recs     []plRec
	backlog  []int // appended, not handed in this life, in order
	handed   []int // handed in this life, not acked
	seq      int   // the last event's number
	closes   []int // the Closes' event numbers
	inflight []int // the records of the Append or Ack running now
	step     int
	errs     []string
	trace    []string // the steps, for a failure's message
}

// plPoint is a crash point: after the event numbered seq, and the
// attempts first Appends (the last one running, unless between), the
// records inflight of the Append or Ack running, at time at; between a
// step and the next, or inside one, before an operation of the file
// system.
type plPoint struct {
	seq, attempts int
	inflight      []int
	between       bool
	at            time.Time
	what          string
	images        []*crashFS
	configs       []crashConfig
	dirOps        []string // the directory's operations not synced, for a failure's message
}

// point is a crash point now. Called with the crashFS's mu held, from the
// driver or from the syncer while the driver sleeps: the model's fields
// it reads were written before the driver last released that mu.
func (m *plModel) point(between bool, what string) plPoint {
	return plPoint{seq: m.seq, attempts: len(m.recs), inflight: slices.Clone(m.inflight), between: between, at: time.Now(), what: what}
}

// done reports whether the event numbered e had ended at p.
func (p plPoint) done(e int) bool { return e > 0 && e <= p.seq }

// durable reports whether the event numbered e, which ended at time at,
// is on the disk at p by the contract: it had ended, and Sync is 0, or a
// Close ended after it, or Sync has passed since (at a point inside a
// sync, the sync of that very moment is not done yet).
func (m *plModel) durable(e int, at time.Time, p plPoint) bool {
	if !p.done(e) {
		return false
	}
	if m.cfg.opts.Sync == 0 {
		return true
	}
	for _, c := range m.closes {
		if c > e && p.done(c) {
			return true
		}
	}
	due := at.Add(m.cfg.opts.Sync)
	return due.Before(p.at) || p.between && due.Equal(p.at)
}

func runPowerLoss(t *testing.T, seed uint64, steps int) (c plCounts) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := plConfig{mapped: rng.IntN(2) == 0}
	if rng.IntN(2) == 0 {
		cfg.opts.Sync = time.Second
	}
	cfg.opts.SegmentBytes = []int64{200, 600, 2 << 10, 5 << 10}[rng.IntN(4)]
	if rng.IntN(3) == 0 {
		cfg.opts.MaxBytes = []int64{3 << 10, 6 << 10, 12 << 10}[rng.IntN(3)]
	}
	c.sequences = 1
	if cfg.mapped {
		c.mapped = 1
	}
	const dir = "/spool"
	f := newCrashFS(dir, cfg.mapped)
	m := &plModel{cfg: cfg}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("seed %d (%s), step %d: %s", seed, cfg, m.step, fmt.Sprintf(format, args...))
	}

	// Crash points inside a step: images taken before each operation of
	// the file system (crashFS.before, with f.mu held), checked once the
	// step is over. Points between steps get more images.
	var points []plPoint
	imageRNG := rand.New(rand.NewPCG(seed, 0x1a6e))
	take := func(p plPoint, all bool, random int) plPoint {
		// What was synced and nothing else; all of the page cache (as a
		// SIGKILL leaves it); random mixes, torn.
		p.configs = append(p.configs, crashConfig{anyDirOps: true})
		if all {
			p.configs = append(p.configs, crashConfig{anyDirOps: true, dirKeep: 100, keep: 100})
		}
		for range random {
			p.configs = append(p.configs, crashConfig{anyDirOps: imageRNG.IntN(2) == 0, dirKeep: imageRNG.IntN(101), keep: imageRNG.IntN(101), torn: true})
		}
		for _, cc := range p.configs {
			p.images = append(p.images, f.crashImage(imageRNG, cc))
		}
		for _, op := range f.ops {
			p.dirOps = append(p.dirOps, op.describe)
		}
		return p
	}
	f.before = func(op string) {
		points = append(points, take(m.point(false, fmt.Sprintf("in step %d before %s", m.step, op)), false, 1))
	}
	check := func() {
		for _, p := range points {
			c.points++
			if p.between {
				c.stepPoints++
			} else {
				c.opPoints++
			}
			for k, img := range p.images {
				c.images++
				if !img.sameAs(f) {
					c.differingImages++
				}
				files := img.files()
				rc := m.checkImage(t, img, p)
				c.recovered += rc.recovered
				c.corrupt += rc.corrupt
				for _, e := range rc.errs {
					t.Errorf("seed %d (%s): crash %s (%+v): %s", seed, cfg, p.what, p.configs[k], e)
				}
				if len(rc.errs) > 0 {
					t.Logf("the directory's operations not synced then: %q; the image's files: %v", p.dirOps, files)
				}
			}
		}
		points = points[:0]
	}
	betweenSteps := func() {
		synctest.Wait() // the syncer, if it runs, is done
		f.mu.Lock()
		points = append(points, take(m.point(true, fmt.Sprintf("after step %d", m.step)), true, 3))
		// The next step, under f.mu: before reads it, from the syncer too.
		m.step++
		f.mu.Unlock()
		check()
	}

	s, err := Open(dir, withFS(cfg.opts, f))
	if err != nil {
		t.Fatalf("seed %d: Open: %v", seed, err)
	}
	open := true
	defer func() {
		if open {
			s.Close()
		}
	}()
	for m.step < steps && !t.Failed() {
		what := m.randomStep(t, rng, s, open)
		switch what {
		case "close":
			if err := s.Close(); err != nil {
				fail("Close: %v", err)
			}
			open = false
			m.seq++
			m.closes = append(m.closes, m.seq)
			m.backlog = m.backlog[:0]
			m.handed = m.handed[:0]
		case "open":
			m.trace = append(m.trace, "open")
			s, err = Open(dir, withFS(cfg.opts, f))
			if err != nil {
				fail("Open after a clean Close: %v", err)
				return c
			}
			open = true
			c.restarts++
			m.backlog = m.backlog[:0]
			maybe := 0 // an Ack of it failed: back, or not
			for i, r := range m.recs {
				switch {
				case r.appendSeq == 0 || r.ackSeq > 0:
				case r.ackFailSeq > 0:
					maybe++
				default:
					m.backlog = append(m.backlog, i)
				}
			}
			if got := s.Stats().Recovered; got < int64(len(m.backlog)) || got > int64(len(m.backlog)+maybe) {
				fail("Open after a clean Close recovered %d records, want %d (and up to %d more)", got, len(m.backlog), maybe)
			}
		}
		step := m.step
		betweenSteps()
		c.steps++
		for _, e := range m.errs {
			t.Errorf("seed %d (%s), step %d: %s", seed, cfg, step, e)
		}
		m.errs = nil
		f.mu.Lock()
		for _, e := range f.misuse {
			fail("file system misused: %s", e)
		}
		f.misuse = nil
		f.mu.Unlock()
	}
	if t.Failed() {
		t.Logf("seed %d, the steps: %s", seed, strings.Join(m.trace, "\n"))
	}
	for _, r := range m.recs {
		if r.appendSeq > 0 {
			c.appended++
		}
		if r.ackSeq > 0 {
			c.acked++
		}
	}
	f.mu.Lock()
	c.fsyncs, c.dirSyncs = f.fsyncs, f.dirSyncs
	f.mu.Unlock()
	return c
}

func withFS(o Options, f FS) Options {
	o.FS = f
	return o
}

// randomStep runs one random step on s (open, or closed: then "open" is
// the step) and updates the model; it returns "close" or "open" for those
// steps, which the caller does.
func (m *plModel) randomStep(t *testing.T, rng *rand.Rand, s *Spool, open bool) string {
	if !open {
		return "open"
	}
	switch r := rng.IntN(100); {
	case r < 35:
		from := len(m.recs)
		for range 1 + rng.IntN(4) {
			m.append(t, s, rng.IntN(3) == 0)
		}
		m.trace = append(m.trace, fmt.Sprintf("append %d-%d", from, len(m.recs)-1))
	case r < 55:
		from := len(m.handed)
		m.load(t, s, 1+rng.IntN(8))
		m.trace = append(m.trace, fmt.Sprintf("load %v", m.handed[min(from, len(m.handed)):]))
	case r < 80:
		m.trace = append(m.trace, fmt.Sprintf("ack %v", m.ack(s, rng)))
	case r < 95:
		d := max(m.cfg.opts.Sync, time.Second)
		d = []time.Duration{d / 2, d, d + d/2, 3 * d}[rng.IntN(4)]
		time.Sleep(d)
		m.trace = append(m.trace, fmt.Sprint("sleep ", d))
	default:
		m.trace = append(m.trace, "close")
		return "close"
	}
	return ""
}

func (m *plModel) append(t *testing.T, s *Spool, direct bool) {
	i := len(m.recs)
	m.recs = append(m.recs, plRec{})
	handed := false
	m.inflight = []int{i}
	defer func() { m.inflight = nil }()
	id, err := s.Append(rec(i), func(ID) bool {
		if len(m.backlog) > 0 {
			m.errs = append(m.errs, fmt.Sprintf("record %d handed directly with a backlog of %d", i, len(m.backlog)))
		}
		handed = direct
		return direct
	})
	switch {
	case errors.Is(err, ErrFull):
		return
	case err != nil:
		m.errs = append(m.errs, fmt.Sprintf("Append %d: %v", i, err))
		return
	}
	m.seq++
	r := &m.recs[i]
	r.appendSeq, r.appendAt, r.id = m.seq, time.Now(), id
	if handed {
		m.handed = append(m.handed, i)
	} else {
		m.backlog = append(m.backlog, i)
	}
}

func (m *plModel) load(t *testing.T, s *Spool, n int) {
	_, err := s.Load(func(id ID, data []byte, _ bool) bool {
		if n == 0 {
			return false
		}
		n--
		i, ok := recNumber(data)
		switch {
		case !ok:
			m.errs = append(m.errs, fmt.Sprintf("Load handed %q, no record's", data))
		case m.recs[i].ackFailSeq > 0 && m.recs[i].ackSeq == 0 && (len(m.backlog) == 0 || m.backlog[0] > i):
			// An Ack of it failed in an earlier life: back after a restart.
			m.handed = append(m.handed, i)
			return true
		case len(m.backlog) == 0 || m.backlog[0] != i:
			m.errs = append(m.errs, fmt.Sprintf("Load handed record %d, want the backlog's first of %v", i, m.backlog[:min(len(m.backlog), 5)]))
		case m.recs[i].id != id:
			m.errs = append(m.errs, fmt.Sprintf("Load handed record %d as %v, appended as %v", i, id, m.recs[i].id))
		}
		if len(m.backlog) > 0 {
			m.backlog = m.backlog[1:]
		}
		m.handed = append(m.handed, i)
		return true
	}, func(id ID, data []byte, _ bool) bool {
		m.errs = append(m.errs, fmt.Sprintf("Load found %v damaged, with no crash", id))
		return true
	})
	if err != nil {
		m.errs = append(m.errs, "Load: "+err.Error())
	}
}

func (m *plModel) ack(s *Spool, rng *rand.Rand) []int {
	if len(m.handed) == 0 {
		return nil
	}
	rng.Shuffle(len(m.handed), func(a, b int) { m.handed[a], m.handed[b] = m.handed[b], m.handed[a] })
	n := 1 + rng.IntN(len(m.handed))
	batch := m.handed[:n]
	var ids []ID
	for _, i := range batch {
		ids = append(ids, m.recs[i].id)
	}
	m.inflight = slices.Clone(batch)
	err := s.Ack(ids)
	m.inflight = nil
	if err != nil {
		if !errors.Is(err, ErrFull) { // the bound: a small MaxBytes may leave no room for the marks
			m.errs = append(m.errs, "Ack: "+err.Error())
		}
		m.seq++
		for _, i := range batch {
			m.recs[i].ackFailSeq = m.seq
		}
		m.handed = slices.Clone(m.handed[n:])
		return nil
	}
	m.seq++
	for _, i := range batch {
		m.recs[i].ackSeq, m.recs[i].ackAt = m.seq, time.Now()
	}
	batch = slices.Clone(batch)
	m.handed = slices.Clone(m.handed[n:])
	return batch
}

// recNumber reads the record number back from a payload that is exactly
// rec(i)'s.
func recNumber(data []byte) (int, bool) {
	var i int
	if _, err := fmt.Sscanf(string(data), `{"r":%d,`, &i); err != nil || i < 0 || string(rec(i)) != string(data) {
		return 0, false
	}
	return i, true
}

// imageCheck is what the recovery of one image found.
type imageCheck struct {
	recovered, corrupt int
	errs               []string
}

// checkImage opens img, a crash image at p, and checks what it hands
// against the model (see TestPowerLoss).
func (m *plModel) checkImage(t *testing.T, img *crashFS, p plPoint) (rc imageCheck) {
	errf := func(format string, args ...any) { rc.errs = append(rc.errs, fmt.Sprintf(format, args...)) }
	o := withFS(m.cfg.opts, img)
	s, err := Open(img.dir, o)
	if err != nil {
		errf("Open refused: %v", err)
		return rc
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	var got []int
	var ids []ID
	_, err = s.Load(func(id ID, data []byte, _ bool) bool {
		ids = append(ids, id)
		i, ok := recNumber(data)
		if !ok || i >= len(m.recs) {
			errf("handed %q: not a record appended", data)
			return true
		}
		got = append(got, i)
		return true
	}, func(id ID, _ []byte, _ bool) bool {
		ids = append(ids, id)
		return true
	})
	if err != nil {
		errf("Load: %v", err)
	}
	st := s.Stats()
	rc.recovered, rc.corrupt = len(got), int(st.Corrupt)
	seen := map[int]bool{}
	for k, i := range got {
		r := m.recs[i]
		inflight := slices.Contains(p.inflight, i)
		switch {
		case seen[i]:
			errf("record %d handed twice", i)
		case i >= p.attempts || !p.done(r.appendSeq) && !inflight:
			errf("record %d back, never appended", i)
		case m.durable(r.ackSeq, r.ackAt, p) && !inflight:
			errf("record %d back, acknowledged (event %d at %v): on the disk by the contract", i, r.ackSeq, r.ackAt.Format(time.TimeOnly))
		}
		seen[i] = true
		if k > 0 && got[k-1] > i {
			errf("record %d after %d: out of order", i, got[k-1])
		}
	}
	for i, r := range m.recs {
		switch {
		case seen[i] || !m.durable(r.appendSeq, r.appendAt, p):
		case p.done(r.ackSeq) || slices.Contains(p.inflight, i) || p.done(r.ackFailSeq):
			// acknowledged before the crash, on the disk or not
		default:
			errf("record %d lost: appended (event %d at %v), on the disk by the contract", i, r.appendSeq, r.appendAt.Format(time.TimeOnly))
		}
	}
	var bytes int64
	for _, size := range img.files() {
		bytes += size
	}
	if st.Bytes != bytes {
		errf("Stats.Bytes %d, the files hold %d: %v", st.Bytes, bytes, img.files())
	}
	// And it works on: a record appended, all acknowledged, closed: a
	// reopen finds nothing, and only what a closed spool leaves.
	if _, err := s.Append(rec(len(m.recs)+1), func(ID) bool { return false }); err != nil && !errors.Is(err, ErrFull) {
		errf("Append after recovery: %v", err)
	}
	_, err = s.Load(func(id ID, _ []byte, _ bool) bool { ids = append(ids, id); return true }, nil)
	if err != nil {
		errf("Load after recovery: %v", err)
	}
	if err := s.Ack(ids); err != nil {
		errf("Ack after recovery: %v", err)
	}
	err = s.Close()
	s = nil
	if err != nil {
		errf("Close after recovery: %v", err)
	}
	s2, err := Open(img.dir, o)
	if err != nil {
		errf("Open after recovery: %v", err)
		return rc
	}
	if n := s2.Stats().Records; n != 0 {
		errf("%d records back after all were acknowledged and the spool closed", n)
	}
	s2.Close()
	for name := range img.files() {
		if !strings.HasSuffix(name, corruptExt) {
			errf("%s left after every record was done", name)
		}
	}
	return rc
}

// sameAs reports whether img holds what f's page cache holds: the image
// of a crash that lost nothing.
func (img *crashFS) sameAs(f *crashFS) bool {
	a := img.files()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(a) != len(f.names) {
		return false
	}
	img.mu.Lock()
	defer img.mu.Unlock()
	for name, ino := range f.names {
		x := img.names[name]
		if x == nil || string(x.data) != string(ino.data) {
			return false
		}
	}
	return true
}
