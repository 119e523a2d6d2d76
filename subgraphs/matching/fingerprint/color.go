package fingerprint

import "math"

// sRGB (D65) <-> CIELAB. Inputs and outputs of the 8-bit side are 0..255.

var srgbToLinearLUT = func() (t [256]float64) {
	for i := range t {
		c := float64(i) / 255
		if c <= 0.04045 {
			t[i] = c / 12.92
		} else {
			t[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return t
}()

func srgbToLinear(v float64) float64 {
	c := v / 255
	if c <= 0.04045 {
		return c / 12.92
	}
	return math.Pow((c+0.055)/1.055, 2.4)
}

func linearToSRGB(c float64) float64 {
	if c <= 0.0031308 {
		return 255 * 12.92 * c
	}
	return 255 * (1.055*math.Pow(c, 1/2.4) - 0.055)
}

const (
	whiteX = 0.95047
	whiteY = 1.0
	whiteZ = 1.08883
)

func labF(t float64) float64 {
	if t > 216.0/24389 {
		return math.Cbrt(t)
	}
	return (24389.0/27*t + 16) / 116
}

func labFInv(t float64) float64 {
	if t3 := t * t * t; t3 > 216.0/24389 {
		return t3
	}
	return (116*t - 16) / (24389.0 / 27)
}

// rgbToLab converts 8-bit-range sRGB (floats, 0..255) to CIELAB.
func rgbToLab(r, g, b float64) (L, A, B float64) {
	if r == math.Trunc(r) && g == math.Trunc(g) && b == math.Trunc(b) && r >= 0 && g >= 0 && b >= 0 && r <= 255 && g <= 255 && b <= 255 {
		return linearToLab(srgbToLinearLUT[int(r)], srgbToLinearLUT[int(g)], srgbToLinearLUT[int(b)])
	}
	return linearToLab(srgbToLinear(r), srgbToLinear(g), srgbToLinear(b))
}

// linearToLab converts linear RGB (0..1) to CIELAB.
func linearToLab(lr, lg, lb float64) (L, A, B float64) {
	x := (0.4124564*lr + 0.3575761*lg + 0.1804375*lb) / whiteX
	y := (0.2126729*lr + 0.7151522*lg + 0.0721750*lb) / whiteY
	z := (0.0193339*lr + 0.1191920*lg + 0.9503041*lb) / whiteZ
	fx, fy, fz := labF(x), labF(y), labF(z)
	return 116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)
}

// labToLinear converts CIELAB to linear RGB (not clamped).
func labToLinear(L, A, B float64) (lr, lg, lb float64) {
	fy := (L + 16) / 116
	fx, fz := fy+A/500, fy-B/200
	x, y, z := labFInv(fx)*whiteX, labFInv(fy)*whiteY, labFInv(fz)*whiteZ
	return 3.2404542*x - 1.5371385*y - 0.4985314*z,
		-0.9692660*x + 1.8760108*y + 0.0415560*z,
		0.0556434*x - 0.2040259*y + 1.0572252*z
}

// labToRGB converts CIELAB to sRGB floats (0..255, clamped).
func labToRGB(L, A, B float64) (r, g, b float64) {
	lr, lg, lb := labToLinear(L, A, B)
	cl := func(v float64) float64 { return math.Max(0, math.Min(255, linearToSRGB(math.Max(0, v)))) }
	return cl(lr), cl(lg), cl(lb)
}

// deltaE76 is the Euclidean distance in CIELAB.
func deltaE76(a, b [3]float64) float64 {
	d0, d1, d2 := a[0]-b[0], a[1]-b[1], a[2]-b[2]
	return math.Sqrt(d0*d0 + d1*d1 + d2*d2)
}
