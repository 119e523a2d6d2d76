package imagefetch

import (
	"bytes"
	"encoding/binary"
)

// The decode budget counts bytes, not pixels: what a decoder actually holds
// depends on the format, bit depth and colour model. These read the headers
// to tell (conservatively: a header that cannot be read costs the most its
// size allows).

// decodeCost is what the standard decoder of format holds to decode data's
// whole w x h frame: the image it returns and everything it keeps meanwhile
// (a progressive JPEG's coefficients, Adam7's pass images, a colour
// conversion's copy).
func decodeCost(format string, data []byte, w, h int) int64 {
	px := int64(w) * int64(h)
	switch format {
	case "png":
		return pngCost(data, px)
	case "jpeg":
		if c, ok := jpegCost(data, w, h); ok {
			return c
		}
		return 24 * px // progressive CMYK, the dearest
	case "webp":
		return webpCost(data, w, h)
	}
	return 8 * px
}

// pngCost: image/png returns Gray, Paletted (1 byte a pixel), RGBA/NRGBA (4),
// Gray16 (2), RGBA64/NRGBA64 (8); a tRNS chunk turns grey and truecolour into
// NRGBA or NRGBA64; an interlaced image is decoded pass by pass, then merged.
func pngCost(data []byte, px int64) int64 {
	p, err := readPNGChunks(data)
	if err != nil {
		return 8 * 2 * px
	}
	bpp := int64(4)
	switch {
	case p.ctype == pngPaletted:
		bpp = 1
	case p.ctype == pngGray && p.trns == nil:
		bpp = int64(max(1, p.depth/8))
	case p.depth == 16:
		bpp = 8
	}
	if p.interlaced {
		bpp *= 2
	}
	return bpp * px
}

// pngReducedCost is what decodePNGReduced holds for a w x h PNG reduced by
// k: two rows of the full image and a reducer (zlib's window and the row of
// pixels are small).
func pngReducedCost(w, h, k int, interlaced bool) int64 {
	return 2*int64(w)*8 + 64<<10 + int64(w)*4 + reducerBytes(w, h, k, !interlaced)
}

// jpegCost reads the frame header (SOF): image/jpeg holds each component's
// plane padded to whole MCUs (1 byte a sample), a progressive JPEG also
// every block's 64 coefficients (4 bytes each) until the end, and a CMYK or
// RGB JPEG is converted into a new 4-byte-a-pixel image.
func jpegCost(data []byte, w, h int) (int64, bool) {
	jfif, adobe, adobeTransform := false, false, byte(0)
	for i := 2; i+4 <= len(data); {
		if data[i] != 0xff {
			return 0, false
		}
		m := data[i+1]
		if m == 0xff { // fill byte
			i++
			continue
		}
		if m == 0xd8 || m == 0x01 || (m >= 0xd0 && m <= 0xd7) {
			i += 2
			continue
		}
		n := int(binary.BigEndian.Uint16(data[i+2:]))
		if n < 2 || i+2+n > len(data) {
			return 0, false
		}
		seg := data[i+4 : i+2+n]
		switch {
		case m == 0xe0 && len(seg) >= 5 && string(seg[:5]) == "JFIF\x00":
			jfif = true
		case m == 0xee && len(seg) >= 12 && string(seg[:5]) == "Adobe":
			adobe, adobeTransform = true, seg[11]
		case m == 0xc0 || m == 0xc1 || m == 0xc2:
			if len(seg) < 6 {
				return 0, false
			}
			nc := int(seg[5])
			if nc != 1 && nc != 3 && nc != 4 || len(seg) < 6+3*nc {
				return 0, false
			}
			hmax, vmax := 1, 1
			var hv [4][2]int
			rgbIDs := nc == 3
			for c := range nc {
				hv[c] = [2]int{max(1, int(seg[6+3*c+1]>>4)), max(1, int(seg[6+3*c+1]&15))}
				hmax, vmax = max(hmax, hv[c][0]), max(vmax, hv[c][1])
				rgbIDs = rgbIDs && seg[6+3*c] == "RGB"[c]
			}
			if nc == 1 {
				hv[0], hmax, vmax = [2]int{1, 1}, 1, 1
			}
			mxx, myy := int64((w+8*hmax-1)/(8*hmax)), int64((h+8*vmax-1)/(8*vmax))
			var samples int64
			for c := range nc {
				samples += 64 * mxx * myy * int64(hv[c][0]*hv[c][1])
			}
			cost := samples
			if m == 0xc2 {
				cost += 4 * samples
			}
			rgb := !jfif && (adobe && adobeTransform == 0 || !adobe && rgbIDs)
			if nc == 4 || nc == 3 && rgb {
				cost += 4 * int64(w) * int64(h)
			}
			return cost, true
		}
		i += 2 + n
	}
	return 0, false
}

// webpCost: a lossy (VP8) frame is YCbCr 4:2:0 in whole macroblocks; an
// alpha plane, when there is one, is decoded as a lossless image first; a
// lossless (VP8L) image is 4 bytes a pixel, with a copy while a colour
// indexing transform is undone.
func webpCost(data []byte, w, h int) int64 {
	const lossless = 6
	px := int64(w) * int64(h)
	lossy := int64((w+15)/16*16) * int64((h+15)/16*16) * 3 / 2
	if len(data) < 16 {
		return lossless * px
	}
	switch string(data[12:16]) {
	case "VP8 ":
		return lossy
	case "VP8X": // extended: the frame is VP8 or VP8L, perhaps with alpha
		cost := lossy
		if bytes.Contains(data[16:], []byte("VP8L")) {
			cost = lossless * px
		}
		if len(data) > 20 && data[20]&0x10 != 0 {
			cost += lossless*px + px
		}
		return cost
	}
	return lossless * px
}

// progressiveJPEG reports whether a JPEG's frame header is progressive.
func progressiveJPEG(data []byte) bool {
	for i := 2; i+4 <= len(data) && data[i] == 0xff; {
		switch m := data[i+1]; {
		case m == 0xff: // fill byte
			i++
		case m == 0xd8 || m == 0x01 || (m >= 0xd0 && m <= 0xd7): // no length
			i += 2
		case m == 0xc2:
			return true
		case m == 0xc0 || m == 0xc1 || m == 0xda:
			return false
		default:
			i += 2 + int(binary.BigEndian.Uint16(data[i+2:]))
		}
	}
	return false
}
