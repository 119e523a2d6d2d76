package imagefetch

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"math/rand/v2"
	"testing"
)

// rawPNG writes a PNG of any colour type, bit depth and interlace, each row
// under a random filter, with sample(x, y, c) as channel c's value (masked
// to the depth): image/png's encoder writes neither Adam7, nor grey or RGB
// with tRNS, nor bit depths under 8.
func rawPNG(w, h, ctype, depth int, interlaced bool, plte, trns []byte, sample func(x, y, c int) int) []byte {
	p := &pngInfo{width: w, height: h, depth: depth, ctype: ctype}
	rng := rand.New(rand.NewPCG(uint64(w*h), uint64(ctype*depth)))
	var raw bytes.Buffer
	passes := adam7[:]
	if !interlaced {
		passes = []struct{ x0, y0, dx, dy int }{{0, 0, 1, 1}}
	}
	bpp := max(1, p.channels()*depth/8)
	for _, pass := range passes {
		pw := (w - pass.x0 + pass.dx - 1) / pass.dx
		ph := (h - pass.y0 + pass.dy - 1) / pass.dy
		if pw <= 0 || ph <= 0 {
			continue
		}
		prev := make([]byte, p.rowBytes(pw))
		for y := range ph {
			row := make([]byte, p.rowBytes(pw))
			bit := 0
			for x := range pw {
				for c := range p.channels() {
					v := sample(pass.x0+x*pass.dx, pass.y0+y*pass.dy, c) & (1<<depth - 1)
					if depth == 16 {
						binary.BigEndian.PutUint16(row[bit/8:], uint16(v))
					} else {
						row[bit/8] |= byte(v << (8 - depth - bit%8))
					}
					bit += depth
				}
			}
			ft := byte(rng.IntN(5))
			out := filterRow(ft, row, prev, bpp)
			raw.WriteByte(ft)
			raw.Write(out)
			prev = row
		}
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw.Bytes())
	zw.Close()
	out := []byte(pngMagic)
	chunk := func(typ string, data []byte) {
		out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
		c := append([]byte(typ), data...)
		out = append(out, c...)
		out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(c))
	}
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	il := byte(0)
	if interlaced {
		il = 1
	}
	chunk("IHDR", append(ihdr, byte(depth), byte(ctype), 0, 0, il))
	if plte != nil {
		chunk("PLTE", plte)
	}
	if trns != nil {
		chunk("tRNS", trns)
	}
	// Two IDAT chunks, to read across a boundary.
	d := z.Bytes()
	chunk("IDAT", d[:len(d)/2])
	chunk("IDAT", d[len(d)/2:])
	chunk("IEND", nil)
	return out
}

// filterRow applies filter ft (the inverse of unfilter).
func filterRow(ft byte, row, prev []byte, bpp int) []byte {
	out := make([]byte, len(row))
	for i := range row {
		var a, b, c int
		if i >= bpp {
			a, c = int(row[i-bpp]), int(prev[i-bpp])
		}
		b = int(prev[i])
		var pred int
		switch ft {
		case 1:
			pred = a
		case 2:
			pred = b
		case 3:
			pred = (a + b) / 2
		case 4:
			pa, pb, pc := abs(b-c), abs(a-c), abs(a+b-2*c)
			switch {
			case pa <= pb && pa <= pc:
				pred = a
			case pb <= pc:
				pred = b
			default:
				pred = c
			}
		}
		out[i] = row[i] - byte(pred)
	}
	return out
}

// TestPNGReducedMatchesFullDecode: reducing while reading gives the very
// pixels that decoding whole (image/png) and then reducing gives, for every
// colour type, bit depth, tRNS and Adam7.
func TestPNGReducedMatchesFullDecode(t *testing.T) {
	sample := func(x, y, c int) int { return (x*37 + y*101 + c*59 + x*y) * 2654435761 >> 7 }
	plte := make([]byte, 3*200)
	for i := range plte {
		plte[i] = byte(i * 7)
	}
	type kind struct {
		ctype, depth int
		plte, trns   []byte
	}
	var kinds []kind
	for _, d := range []int{1, 2, 4, 8, 16} {
		kinds = append(kinds, kind{pngGray, d, nil, nil}, kind{pngGray, d, nil, []byte{0, 1}})
	}
	for _, d := range []int{8, 16} {
		kinds = append(kinds, kind{pngRGB, d, nil, nil}, kind{pngRGB, d, nil, []byte{0, 3, 0, 5, 0, 7}},
			kind{pngGrayAlpha, d, nil, nil}, kind{pngRGBA, d, nil, nil})
	}
	for _, d := range []int{1, 2, 4, 8} {
		n := min(200, 1<<d)
		kinds = append(kinds, kind{pngPaletted, d, plte[:3*n], nil}, kind{pngPaletted, d, plte[:3*n], []byte{0, 128, 255}})
	}
	for _, k := range kinds {
		for _, interlaced := range []bool{false, true} {
			for _, size := range [][2]int{{97, 61}, {13, 200}, {5, 3}, {32, 40}} {
				name := fmt.Sprintf("type%d/depth%d/trns%v/adam7=%v/%dx%d", k.ctype, k.depth, k.trns != nil, interlaced, size[0], size[1])
				s := sample
				if k.ctype == pngPaletted {
					n := len(k.plte) / 3
					s = func(x, y, c int) int { return sample(x, y, c) % n }
				}
				data := rawPNG(size[0], size[1], k.ctype, k.depth, interlaced, k.plte, k.trns, s)
				full, err := png.Decode(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("%s: image/png: %v", name, err)
				}
				k := reduceFactor(size[0], size[1], 16)
				want := reduce(full, k)
				got, err := decodePNGReduced(data, k)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !bytes.Equal(got.Pix, want.Pix) || got.Bounds() != want.Bounds() {
					t.Errorf("%s: reduced while reading differs from decoded whole, then reduced", name)
				}
				// Every truncation is an error, never a panic.
				for _, cut := range []int{len(data) - 13, len(data) * 2 / 3, 40} {
					if _, err := decodePNGReduced(data[:cut], k); err == nil {
						t.Errorf("%s: cut at %d: no error", name, cut)
					}
				}
			}
		}
	}
	_ = image.Rect
}
