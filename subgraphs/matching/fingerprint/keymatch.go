package fingerprint

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
)

// Matching keypoints: each of the photo's keypoints is paired with its
// nearest in the evidence when that is close (kmMaxDistance bits of 256) and
// clearly nearer than the next (kmRatio); the pairs that agree on how the
// design is turned and scaled in the photo (the densest cell of a vote over
// both) are then fitted with one affine placement of the evidence in the
// photo, the best of RANSAC's tries, and the pairs it places within
// kmTolerance count: the inliers. Pairs of a design's repeated parts or of
// another design rarely agree on one placement, so a photo of another band
// keeps a handful and a photo of the band dozens to hundreds. Where a brand's
// lines share a design, the pairs on what they share count for each of them
// alike and the pairs on the line's own name and marks only for its line:
// the inliers of two such lines differ by what tells them apart.
const (
	kmMaxDistance = 64
	kmRatio       = 0.8
	kmAngleBins   = 12
	kmTries       = 256
	// kmTolerance is how far (pixels of the photo's keypoint image) a
	// placed evidence keypoint may fall from its pair.
	kmTolerance = 10
)

// KeyMatch is how a photo's keypoints meet an evidence's.
type KeyMatch struct {
	// Inliers is how many pairs one placement of the evidence explains.
	Inliers int
}

// KeyPair is a query keypoint Q paired with evidence keypoint E by an index
// that checked only some of the evidence's keypoints: D is their distance
// (bits), D2 that of the evidence's next nearest keypoint the index checked
// (256 when none).
type KeyPair struct {
	Q, E  int32
	D, D2 int16
}

type pair struct{ q, e int32 }

// DescriptorDistance is how many of two keypoint descriptors' 256 bits
// differ (a and b are 4 words each).
func DescriptorDistance(a, b []uint64) int {
	return bits.OnesCount64(a[0]^b[0]) + bits.OnesCount64(a[1]^b[1]) + bits.OnesCount64(a[2]^b[2]) + bits.OnesCount64(a[3]^b[3])
}

// MatchKeypoints matches query keypoints q against evidence keypoints e,
// pairing every keypoint of q with its nearest in e.
func MatchKeypoints(q, e *Keypoints) KeyMatch {
	if q.Len() < 3 || e.Len() < 3 {
		return KeyMatch{}
	}
	return place(q, e, agreeing(q, e, nearestPairs(q, e)))
}

// VerifyPairs is MatchKeypoints for the pairs an index found.
func VerifyPairs(q, e *Keypoints, pairs []KeyPair) KeyMatch {
	if q.Len() < 3 || e.Len() < 3 {
		return KeyMatch{}
	}
	return place(q, e, agreeing(q, e, unambiguous(pairs)))
}

// unambiguous keeps the pairs that are near and clearly nearer than the
// next (kmRatio).
func unambiguous(pairs []KeyPair) []pair {
	out := make([]pair, 0, len(pairs))
	for _, p := range pairs {
		if p.D <= kmMaxDistance && float64(p.D) < kmRatio*float64(p.D2) {
			out = append(out, pair{p.Q, p.E})
		}
	}
	return out
}

// nearestPairs pairs each query keypoint with its nearest evidence keypoint,
// when near and unambiguous.
func nearestPairs(q, e *Keypoints) []pair {
	var out []pair
	ed := e.desc
	for i := range len(q.pts) {
		a := q.desc[i*4 : i*4+4 : i*4+4]
		b1, b2, bj := 257, 257, -1
		for j := 0; j < len(ed)/4; j++ {
			d := DescriptorDistance(a, ed[j*4:j*4+4:j*4+4])
			if d < b2 {
				if d < b1 {
					b2, b1, bj = b1, d, j
				} else {
					b2 = d
				}
			}
		}
		if bj >= 0 && b1 <= kmMaxDistance && float64(b1) < kmRatio*float64(b2) {
			out = append(out, pair{int32(i), int32(bj)})
		}
	}
	return out
}

// agreeing keeps the pairs in the densest cell of a vote over turn (the
// keypoints' angle difference, kmAngleBins bins) and scale (level
// difference), and in its neighbouring cells.
func agreeing(q, e *Keypoints, pairs []pair) []pair {
	const nl = 2*kpLevels - 1
	var votes [kmAngleBins][nl]int
	cell := func(p pair) (int, int) {
		da := int(q.pts[p.q].angle) - int(e.pts[p.e].angle)
		a := ((da*kmAngleBins+128)>>8 + kmAngleBins) % kmAngleBins
		return a, int(q.pts[p.q].level) - int(e.pts[p.e].level) + kpLevels - 1
	}
	for _, p := range pairs {
		a, s := cell(p)
		votes[a][s] += 2
		votes[(a+1)%kmAngleBins][s]++
		votes[(a+kmAngleBins-1)%kmAngleBins][s]++
		if s > 0 {
			votes[a][s-1]++
		}
		if s < nl-1 {
			votes[a][s+1]++
		}
	}
	ba, bs, bv := 0, 0, -1
	for a := range kmAngleBins {
		for s := range nl {
			if votes[a][s] > bv {
				ba, bs, bv = a, s, votes[a][s]
			}
		}
	}
	out := pairs[:0:0]
	for _, p := range pairs {
		a, s := cell(p)
		if da := (a - ba + kmAngleBins) % kmAngleBins; (da <= 1 || da == kmAngleBins-1) && s-bs <= 1 && bs-s <= 1 {
			out = append(out, p)
		}
	}
	return out
}

// place fits the affine placement that explains the most pairs (RANSAC over
// triples, a seed fixed by the pairs' number: the same keypoints give the
// same answer).
func place(q, e *Keypoints, pairs []pair) KeyMatch {
	var best KeyMatch
	n := len(pairs)
	if n < 3 {
		return best
	}
	r := rand.New(rand.NewPCG(uint64(n), 0x706c616365))
	for range kmTries {
		i, j, k := r.IntN(n), r.IntN(n), r.IntN(n)
		if i == j || j == k || i == k {
			continue
		}
		A, ok := affineFrom(q, e, pairs[i], pairs[j], pairs[k])
		if !ok {
			continue
		}
		if c := countPlaced(q, e, pairs, A); c > best.Inliers {
			best.Inliers = c
		}
		if best.Inliers == n {
			break
		}
	}
	return best
}

// countPlaced counts the pairs A places within kmTolerance.
func countPlaced(q, e *Keypoints, pairs []pair, A [6]float64) int {
	c := 0
	for _, p := range pairs {
		ep, qp := e.pts[p.e], q.pts[p.q]
		ex, ey := float64(ep.x), float64(ep.y)
		dx := A[0]*ex + A[1]*ey + A[2] - float64(qp.x)
		dy := A[3]*ex + A[4]*ey + A[5] - float64(qp.y)
		if dx*dx+dy*dy < kmTolerance*kmTolerance {
			c++
		}
	}
	return c
}

// affineFrom is the affine map taking three pairs' evidence points to their
// query points; ok is false when the points are nearly collinear or the map
// shrinks or grows the design beyond any photo's (an area factor outside
// 1/50..9).
func affineFrom(q, e *Keypoints, a, b, c pair) ([6]float64, bool) {
	x1, y1 := float64(e.pts[a.e].x), float64(e.pts[a.e].y)
	x2, y2 := float64(e.pts[b.e].x), float64(e.pts[b.e].y)
	x3, y3 := float64(e.pts[c.e].x), float64(e.pts[c.e].y)
	det := x1*(y2-y3) - y1*(x2-x3) + (x2*y3 - x3*y2)
	var A [6]float64
	if math.Abs(det) < 100 {
		return A, false
	}
	solve := func(u1, u2, u3 float64) (float64, float64, float64) {
		return (u1*(y2-y3) - y1*(u2-u3) + (u2*y3 - u3*y2)) / det,
			(x1*(u2-u3) - u1*(x2-x3) + (x2*u3 - x3*u2)) / det,
			(x1*(y2*u3-y3*u2) - y1*(x2*u3-x3*u2) + u1*(x2*y3-x3*y2)) / det
	}
	A[0], A[1], A[2] = solve(float64(q.pts[a.q].x), float64(q.pts[b.q].x), float64(q.pts[c.q].x))
	A[3], A[4], A[5] = solve(float64(q.pts[a.q].y), float64(q.pts[b.q].y), float64(q.pts[c.q].y))
	area := A[0]*A[4] - A[1]*A[3]
	return A, area > 0.02 && area < 9
}

// PlacementVotes ranks evidence quickly, before a few are verified: each
// pair says where the evidence's centre is in the photo (the keypoints'
// angle and scale differences turn and scale the way from the evidence
// keypoint to the centre), and it counts the most pairs that say about the
// same: within a quarter of the placed design's size, a twelfth of a turn
// and a scale step (each pair votes for the two nearest cells along angle,
// x and y). Pairs not clearly nearer than the next (kmRatio) do not vote.
func PlacementVotes(q, e *Keypoints, pairs []KeyPair) int {
	ps := unambiguous(pairs)
	if len(ps) < 3 || e.Len() == 0 {
		return 0
	}
	ecx, ecy, ext := e.centre()
	// Each vote is a cell packed in a word, counted in an open-addressing
	// table; the most common word wins. (Sorting the words cost four times
	// as much.)
	size := 16
	for size < 16*len(ps) {
		size *= 2
	}
	t := voteTables.Get().(*voteTable)
	defer voteTables.Put(t)
	if cap(t.keys) < size {
		t.keys, t.counts = make([]uint64, size), make([]int32, size)
	}
	keys, counts := t.keys[:size], t.counts[:size]
	clear(keys)
	best := int32(0)
	vote := func(k uint64) {
		k++ // 0 marks an empty slot
		h := (k * 0x9e3779b97f4a7c15) >> 32
		for i := h & uint64(size-1); ; i = (i + 1) & uint64(size-1) {
			switch keys[i] {
			case k:
				counts[i]++
				best = max(best, counts[i])
				return
			case 0:
				keys[i], counts[i] = k, 1
				best = max(best, 1)
				return
			}
		}
	}
	for _, p := range ps {
		qp, ep := q.pts[p.q], e.pts[p.e]
		dl := int32(qp.level) - int32(ep.level)
		s := kpScales[dl+kpLevels-1]
		turn := (int(qp.angle) - int(ep.angle)) & 255
		c, sn := kpTurns[turn][0], kpTurns[turn][1]
		vx, vy := (ecx-float64(ep.x))*s, (ecy-float64(ep.y))*s
		px, py := float64(qp.x)+c*vx-sn*vy, float64(qp.y)+sn*vx+c*vy
		bin := s * ext / 4
		fa := float64(turn) * kmAngleBins / 256
		fx, fy := px/bin, py/bin
		a0, x0, y0 := int32(math.Floor(fa)), int32(math.Floor(fx)), int32(math.Floor(fy))
		// Vote in the two nearest cells along each of angle, x and y.
		as := [2]int32{a0 % kmAngleBins, (a0 + 1) % kmAngleBins}
		xs := [2]int32{x0, x0 + 1}
		ys := [2]int32{y0, y0 + 1}
		if fa-float64(a0) < 0.5 {
			as[1] = (a0 + kmAngleBins - 1) % kmAngleBins
		}
		if fx-float64(x0) < 0.5 {
			xs[1] = x0 - 1
		}
		if fy-float64(y0) < 0.5 {
			ys[1] = y0 - 1
		}
		for _, a := range as {
			for _, x := range xs {
				for _, y := range ys {
					vote(uint64(uint8(a))<<56 | uint64(uint8(dl))<<48 | uint64(uint16(int16(x)))<<16 | uint64(uint16(int16(y))))
				}
			}
		}
	}
	return int(best)
}

// voteTable is PlacementVotes' counting table, lent from voteTables: one
// recognition counts for hundreds of evidence items.
type voteTable struct {
	keys   []uint64
	counts []int32
}

var voteTables = sync.Pool{New: func() any { return new(voteTable) }}

// kpScales are kpFactor's powers for level differences -7..7; kpTurns the
// cosine and sine of each 1/256 turn.
var (
	kpScales = func() (out [2*kpLevels - 1]float64) {
		for i := range out {
			out[i] = math.Pow(kpFactor, float64(i-(kpLevels-1)))
		}
		return out
	}()
	kpTurns = func() (out [256][2]float64) {
		for i := range out {
			a := float64(i) * 2 * math.Pi / 256
			out[i] = [2]float64{math.Cos(a), math.Sin(a)}
		}
		return out
	}()
)

// centre is the middle of the keypoints' extent and its larger side
// (computed once).
func (k *Keypoints) centre() (x, y, side float64) {
	k.centreOnce.Do(func() {
		x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
		for _, p := range k.pts {
			x0, x1 = math.Min(x0, float64(p.x)), math.Max(x1, float64(p.x))
			y0, y1 = math.Min(y0, float64(p.y)), math.Max(y1, float64(p.y))
		}
		k.cx, k.cy, k.side = (x0+x1)/2, (y0+y1)/2, math.Max(16, math.Max(x1-x0, y1-y0))
	})
	return k.cx, k.cy, k.side
}

// What inliers are worth: those beyond keyNoise (about what a photo of
// another band keeps) give 1-exp(-x/keyScale), so thirty inliers score 0.4
// and a hundred 0.85.
const (
	keyNoise = 4
	keyScale = 50
)

// KeypointScore is what inliers are worth, 0..1.
func KeypointScore(inliers float64) float64 {
	return 1 - math.Exp(-math.Max(0, inliers-keyNoise)/keyScale)
}
