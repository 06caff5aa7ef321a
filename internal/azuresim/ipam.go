package azuresim

import (
	"net/netip"
	"sort"
	"strings"
)

// ipPool allocates private IPv4 addresses in one subnet. Azure reserves five
// addresses in every subnet: the network address, the next three (gateway and
// DNS) and the broadcast address.
type ipPool struct {
	name     string
	prefixes []netip.Prefix
	used     map[netip.Addr]string // address -> ID of the holder
}

func newIPPool(name string, prefixes []string) (*ipPool, *armError) {
	p := &ipPool{name: name, used: map[netip.Addr]string{}}
	for _, s := range prefixes {
		pfx, err := netip.ParsePrefix(s)
		if err != nil || !pfx.Addr().Is4() || pfx != pfx.Masked() {
			return nil, errBadRequest("InvalidAddressPrefixFormat",
				"Address prefix %s of resource %s is not formatted correctly. It should follow CIDR notation, for example 10.0.0.0/24.", s, name)
		}
		if pfx.Bits() > 29 {
			return nil, errBadRequest("InvalidAddressPrefix",
				"Subnet %s has an address prefix %s that is smaller than the smallest allowed (/29).", name, s)
		}
		p.prefixes = append(p.prefixes, pfx)
	}
	if len(p.prefixes) == 0 {
		return nil, errBadRequest("InvalidRequestFormat", "Subnet %s has no address prefix.", name)
	}
	return p, nil
}

// reserved reports whether Azure keeps addr for itself.
func reserved(pfx netip.Prefix, addr netip.Addr) bool {
	first := pfx.Addr()
	for i := 0; i < 4; i++ {
		if addr == first {
			return true
		}
		first = first.Next()
	}
	return addr == lastAddr(pfx)
}

func lastAddr(pfx netip.Prefix) netip.Addr {
	a := pfx.Addr().As4()
	host := 32 - pfx.Bits()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= (1 << host) - 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// allocate hands out the lowest free address.
func (p *ipPool) allocate(holder string) (string, *armError) {
	for _, pfx := range p.prefixes {
		for a := pfx.Addr(); pfx.Contains(a); a = a.Next() {
			if reserved(pfx, a) {
				continue
			}
			if _, taken := p.used[a]; !taken {
				p.used[a] = holder
				return a.String(), nil
			}
		}
	}
	return "", errBadRequest("SubnetIsFull",
		"Subnet %s with address prefix %s does not have enough capacity for 1 IP addresses.", p.name, p.prefixes[0])
}

// claim takes a requested static address.
func (p *ipPool) claim(addr, holder string) *armError {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return errBadRequest("InvalidPrivateIPAddress", "Private static IP address %s is not a valid IP address.", addr)
	}
	for _, pfx := range p.prefixes {
		if !pfx.Contains(a) {
			continue
		}
		if reserved(pfx, a) {
			return errBadRequest("PrivateIPAddressInReservedRange",
				"Private static IP address %s falls within reserved IP range of subnet prefix %s.", addr, pfx)
		}
		if h, taken := p.used[a]; taken && h != holder {
			return errBadRequest("PrivateIPAddressInUse",
				"IP configuration %s is using the private IP address %s which is already allocated to resource %s.", holder, addr, h)
		}
		p.used[a] = holder
		return nil
	}
	return errBadRequest("PrivateIPAddressNotInSubnet",
		"IP configuration %s is using the private IP address %s which does not belong to the subnet prefix %s.", holder, addr, p.prefixes[0])
}

// release frees every address held by holder or by its sub-resources.
func (p *ipPool) release(holder string) {
	holder = strings.TrimRight(holder, "/")
	for a, h := range p.used {
		// h is holder or under it, in any case, without lower-cased copies
		// (key): a deletion releases in every pool.
		if hasPrefixFold(h, holder) && (len(h) == len(holder) || h[len(holder)] == '/') {
			delete(p.used, a)
		}
	}
}

// holders lists what holds addresses, sorted, for InUse errors.
func (p *ipPool) holders() []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range p.used {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

// hasPrefixFold is strings.HasPrefix under case folding, without lower-cased
// copies: it runs for every endpoint of a network on each endpoint's
// create, and for every address of every pool on each release. ARM's IDs
// are ASCII.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
