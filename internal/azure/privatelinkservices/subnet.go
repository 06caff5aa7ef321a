package privatelinkservices

import (
	"net/netip"
)

// FreePrefix finds the first prefix of the given length inside the address
// space that overlaps none of the used prefixes. It reads the VNet's real
// address space: nothing about 10.0.0.0/16 is assumed.
func FreePrefix(space, used []netip.Prefix, bits int) (netip.Prefix, bool) {
	for _, s := range space {
		s = s.Masked()
		if !s.Addr().Is4() || bits < s.Bits() || bits > 32 {
			continue
		}
		size := uint64(1) << (32 - bits)
		start := uint64(v4(s.Addr()))
		end := start + (uint64(1) << (32 - s.Bits()))
		for a := start; a+size <= end; a += size {
			cand := netip.PrefixFrom(fromV4(uint32(a)), bits)
			if !overlapsAny(cand, used) {
				return cand, true
			}
		}
	}
	return netip.Prefix{}, false
}

func overlapsAny(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if p.Overlaps(u) {
			return true
		}
	}
	return false
}

func v4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func fromV4(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
