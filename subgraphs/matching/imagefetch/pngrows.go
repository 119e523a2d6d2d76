package imagefetch

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"io"
)

// A PNG's pixels arrive row by row (zlib over the IDAT chunks, each row
// filtered against the one above), so a large PNG can be reduced while it is
// read: decodePNGReduced holds two rows of the full image and the reduced
// one, never the whole frame (a 40 MP 16-bit RGBA PNG is 320 MB whole, a few
// hundred KB compressed). It accepts what image/png accepts, and the colours
// are those image/png's decoded image gives through its RGBA method.

// pngInfo is what the chunks before the pixels say.
type pngInfo struct {
	width, height int
	depth         int // bits per sample
	ctype         int // colour type
	interlaced    bool
	palette       [][4]uint8 // premultiplied RGBA
	trns          []byte     // tRNS chunk data, nil if absent
	idat          []byte     // the chunks from the first IDAT on
}

const pngMagic = "\x89PNG\r\n\x1a\n"

// idatReader reads the data of consecutive IDAT chunks, in place.
type idatReader struct {
	rest, cur []byte
}

func (r *idatReader) Read(b []byte) (int, error) {
	for len(r.cur) == 0 {
		if len(r.rest) < 12 || string(r.rest[4:8]) != "IDAT" {
			return 0, io.EOF
		}
		n := binary.BigEndian.Uint32(r.rest) // checked by readPNGChunks
		r.cur, r.rest = r.rest[8:8+n], r.rest[12+n:]
	}
	n := copy(b, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

const (
	pngGray      = 0
	pngRGB       = 2
	pngPaletted  = 3
	pngGrayAlpha = 4
	pngRGBA      = 6
)

var errPNG = errors.New("png: invalid format")

// readPNGChunks reads the chunks up to IEND, checking their CRCs, and keeps
// the IDAT data in place (slices of data, not copies).
func readPNGChunks(data []byte) (*pngInfo, error) {
	if !bytes.HasPrefix(data, []byte(pngMagic)) {
		return nil, errPNG
	}
	p := &pngInfo{}
	rest := data[len(pngMagic):]
	seenIHDR, seenIDAT, afterIDAT := false, false, false
	for {
		chunk := rest
		if len(rest) < 12 {
			return nil, io.ErrUnexpectedEOF
		}
		n := binary.BigEndian.Uint32(rest)
		if n > 0x7fffffff || int64(n) > int64(len(rest))-12 {
			return nil, io.ErrUnexpectedEOF
		}
		typ, body := string(rest[4:8]), rest[8:8+n]
		if crc32.ChecksumIEEE(rest[4:8+n]) != binary.BigEndian.Uint32(rest[8+n:]) {
			return nil, fmt.Errorf("png: invalid format: %s chunk checksum mismatch", typ)
		}
		rest = rest[12+n:]
		if !seenIHDR && typ != "IHDR" {
			return nil, fmt.Errorf("png: invalid format: chunk out of order")
		}
		switch typ {
		case "IHDR":
			if seenIHDR || n != 13 {
				return nil, errPNG
			}
			seenIHDR = true
			if err := p.ihdr(body); err != nil {
				return nil, err
			}
		case "PLTE":
			if n%3 != 0 || n == 0 || n > 256*3 || seenIDAT || p.palette != nil {
				return nil, errPNG
			}
			for i := 0; i < int(n); i += 3 {
				p.palette = append(p.palette, [4]uint8{body[i], body[i+1], body[i+2], 0xff})
			}
		case "tRNS":
			if seenIDAT || p.trns != nil {
				return nil, errPNG
			}
			p.trns = body
		case "IDAT":
			if afterIDAT {
				return nil, fmt.Errorf("png: invalid format: IDAT chunks are not consecutive")
			}
			if !seenIDAT {
				p.idat = chunk
			}
			seenIDAT = true
			continue
		case "IEND":
			if !seenIDAT {
				return nil, errPNG
			}
			return p, p.check()
		}
		afterIDAT = seenIDAT
	}
}

func (p *pngInfo) ihdr(b []byte) error {
	w, h := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	if w == 0 || h == 0 || w > 0x7fffffff || h > 0x7fffffff || b[10] != 0 || b[11] != 0 || b[12] > 1 {
		return errPNG
	}
	p.width, p.height, p.depth, p.ctype, p.interlaced = int(w), int(h), int(b[8]), int(b[9]), b[12] == 1
	ok := false
	switch p.ctype {
	case pngGray:
		ok = p.depth == 1 || p.depth == 2 || p.depth == 4 || p.depth == 8 || p.depth == 16
	case pngPaletted:
		ok = p.depth == 1 || p.depth == 2 || p.depth == 4 || p.depth == 8
	case pngRGB, pngGrayAlpha, pngRGBA:
		ok = p.depth == 8 || p.depth == 16
	}
	if !ok {
		return fmt.Errorf("png: unsupported colour type %d at bit depth %d", p.ctype, p.depth)
	}
	return nil
}

// check applies tRNS to the palette and refuses what image/png refuses.
func (p *pngInfo) check() error {
	switch p.ctype {
	case pngPaletted:
		if p.palette == nil || len(p.trns) > 256 {
			return errPNG
		}
		// Indexes past the palette are opaque black, as in image/png (and
		// libpng), and so are tRNS entries past it.
		for len(p.palette) < 256 {
			p.palette = append(p.palette, [4]uint8{0, 0, 0, 0xff})
		}
		for i, a := range p.trns {
			c := &p.palette[i]
			c[0], c[1], c[2], c[3] = premul(c[0], a), premul(c[1], a), premul(c[2], a), a
		}
	case pngGray:
		if p.trns != nil && len(p.trns) != 2 {
			return errPNG
		}
	case pngRGB:
		if p.trns != nil && len(p.trns) != 6 {
			return errPNG
		}
	default:
		if p.trns != nil {
			return errPNG
		}
	}
	return nil
}

// channels is the samples per pixel.
func (p *pngInfo) channels() int {
	return [...]int{pngGray: 1, pngRGB: 3, pngPaletted: 1, pngGrayAlpha: 2, pngRGBA: 4}[p.ctype]
}

// rowBytes is one filtered row of w pixels, without its filter byte.
func (p *pngInfo) rowBytes(w int) int { return (w*p.channels()*p.depth + 7) / 8 }

// adam7 is the passes of an interlaced PNG: offsets and steps.
var adam7 = [7]struct{ x0, y0, dx, dy int }{
	{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2},
}

// decodePNGReduced decodes a PNG reduced by k (area averaging), row by row.
func decodePNGReduced(data []byte, k int) (*image.RGBA, error) {
	p, err := readPNGChunks(data)
	if err != nil {
		return nil, err
	}
	z, err := zlib.NewReader(&idatReader{rest: p.idat})
	if err != nil {
		return nil, fmt.Errorf("png: %w", err)
	}
	defer z.Close()
	red := newReducer(p.width, p.height, k, !p.interlaced)
	passes := adam7[:]
	if !p.interlaced {
		passes = []struct{ x0, y0, dx, dy int }{{0, 0, 1, 1}}
	}
	bpp := max(1, p.channels()*p.depth/8)
	cur := make([]byte, p.rowBytes(p.width)+1)
	prev := make([]byte, len(cur))
	px := make([]uint8, p.width*4)
	for _, pass := range passes {
		pw := (p.width - pass.x0 + pass.dx - 1) / pass.dx
		ph := (p.height - pass.y0 + pass.dy - 1) / pass.dy
		if pw <= 0 || ph <= 0 {
			continue
		}
		n := p.rowBytes(pw) + 1
		c, q := cur[:n], prev[:n]
		clear(q)
		for y := range ph {
			if _, err := io.ReadFull(z, c); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return nil, fmt.Errorf("png: %w", err)
			}
			if err := unfilter(c[0], c[1:], q[1:], bpp); err != nil {
				return nil, err
			}
			p.pixels(c[1:], pw, px)
			sy := pass.y0 + y*pass.dy
			if !p.interlaced {
				red.row(sy, px)
			} else {
				for x := range pw {
					red.pixel(pass.x0+x*pass.dx, sy, [4]uint8(px[x*4:x*4+4]))
				}
			}
			c, q = q, c
		}
	}
	return red.image(), nil
}

// unfilter undoes a row's filter in place (PNG spec 9.2; as image/png).
func unfilter(ft byte, cdat, pdat []byte, bpp int) error {
	switch ft {
	case 0:
	case 1:
		for i := bpp; i < len(cdat); i++ {
			cdat[i] += cdat[i-bpp]
		}
	case 2:
		for i, v := range pdat {
			cdat[i] += v
		}
	case 3:
		for i := 0; i < bpp && i < len(cdat); i++ {
			cdat[i] += pdat[i] / 2
		}
		for i := bpp; i < len(cdat); i++ {
			cdat[i] += uint8((int(cdat[i-bpp]) + int(pdat[i])) / 2)
		}
	case 4:
		for i := range cdat {
			var a, c int
			if i >= bpp {
				a, c = int(cdat[i-bpp]), int(pdat[i-bpp])
			}
			b := int(pdat[i])
			pa, pb, pc := abs(b-c), abs(a-c), abs(a+b-2*c)
			switch {
			case pa <= pb && pa <= pc:
				cdat[i] += uint8(a)
			case pb <= pc:
				cdat[i] += uint8(b)
			default:
				cdat[i] += uint8(c)
			}
		}
	default:
		return errors.New("png: invalid format: bad filter type")
	}
	return nil
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// pixels turns an unfiltered row of w pixels into premultiplied 8-bit RGBA,
// the colours image/png's image gives through its RGBA method, >> 8.
func (p *pngInfo) pixels(row []byte, w int, out []uint8) {
	set := func(x int, r, g, b, a uint16) { // 16-bit, not premultiplied
		a32 := uint32(a)
		out[x*4] = uint8(uint32(r) * a32 / 0xffff >> 8)
		out[x*4+1] = uint8(uint32(g) * a32 / 0xffff >> 8)
		out[x*4+2] = uint8(uint32(b) * a32 / 0xffff >> 8)
		out[x*4+3] = uint8(a >> 8)
	}
	be := func(i int) uint16 { return binary.BigEndian.Uint16(row[i:]) }
	switch {
	case p.depth < 8: // grey or paletted, packed from the high bit
		per := 8 / p.depth
		mask := byte(1<<p.depth - 1)
		for x := range w {
			v := row[x/per] >> (8 - p.depth*(x%per+1)) & mask
			if p.ctype == pngPaletted {
				copy(out[x*4:], p.palette[v][:])
				continue
			}
			g := uint16(v) * (0xffff / uint16(mask))
			a := uint16(0xffff)
			if len(p.trns) == 2 && uint16(v) == binary.BigEndian.Uint16(p.trns)&uint16(mask) {
				a = 0
			}
			set(x, g, g, g, a)
		}
	case p.ctype == pngPaletted:
		for x, v := range row[:w] {
			copy(out[x*4:], p.palette[v][:])
		}
	case p.depth == 8:
		ch := p.channels()
		for x := range w {
			s := row[x*ch : x*ch+ch]
			var r, g, b, a uint16
			switch p.ctype {
			case pngGray:
				r, g, b, a = uint16(s[0]), uint16(s[0]), uint16(s[0]), 0xff
				if len(p.trns) == 2 && s[0] == p.trns[1] {
					a = 0
				}
			case pngGrayAlpha:
				r, g, b, a = uint16(s[0]), uint16(s[0]), uint16(s[0]), uint16(s[1])
			case pngRGB:
				r, g, b, a = uint16(s[0]), uint16(s[1]), uint16(s[2]), 0xff
				if len(p.trns) == 6 && s[0] == p.trns[1] && s[1] == p.trns[3] && s[2] == p.trns[5] {
					a = 0
				}
			case pngRGBA:
				r, g, b, a = uint16(s[0]), uint16(s[1]), uint16(s[2]), uint16(s[3])
			}
			set(x, r*0x101, g*0x101, b*0x101, a*0x101)
		}
	default: // 16 bits a sample
		ch := p.channels()
		for x := range w {
			i := x * ch * 2
			var r, g, b, a uint16
			switch p.ctype {
			case pngGray:
				r = be(i)
				g, b, a = r, r, 0xffff
				if len(p.trns) == 2 && r == binary.BigEndian.Uint16(p.trns) {
					a = 0
				}
			case pngGrayAlpha:
				r = be(i)
				g, b, a = r, r, be(i+2)
			case pngRGB:
				r, g, b, a = be(i), be(i+2), be(i+4), 0xffff
				if len(p.trns) == 6 && r == binary.BigEndian.Uint16(p.trns) && g == binary.BigEndian.Uint16(p.trns[2:]) && b == binary.BigEndian.Uint16(p.trns[4:]) {
					a = 0
				}
			case pngRGBA:
				r, g, b, a = be(i), be(i+2), be(i+4), be(i+6)
			}
			set(x, r, g, b, a)
		}
	}
}
