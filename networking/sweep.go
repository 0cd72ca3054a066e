package networking

import (
	"context"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
)

// sweepTables are the iptables tables CNI plugins put per-pod rules in.
var sweepTables = []string{"nat", "filter"}

// sharedChains are CNI chains shared by every pod; they are never removed.
var sharedChains = map[string]bool{
	"CNI-HOSTPORT-DNAT": true, "CNI-HOSTPORT-SNAT": true, "CNI-HOSTPORT-MASQ": true,
	"CNI-HOSTPORT-SETMARK": true, "CNI-FORWARD": true, "CNI-ADMIN": true, "CNI-ISOLATION-STAGE-1": true,
	"CNI-ISOLATION-STAGE-2": true,
}

// sweepIPTables removes the iptables rules that CNI plugins tagged with the
// pod's container ID (comment `id: "<uuid>"`), the per-pod chains they
// jump to, and the pod's chains on nets by their names (podChains). Plugins
// do this themselves on DEL, but only when they can still find the pod's
// interface: after the namespace vanished, or after an ADD or DEL that was
// killed half-way, the rules would otherwise stay forever.
func sweepIPTables(ctx context.Context, uuid string, nets []string) error {
	var errs []string
	for _, bin := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(bin + "-save"); err != nil {
			continue
		}
		for _, table := range sweepTables {
			if err := sweepTable(ctx, bin, table, uuid, nets); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot remove iptables rules of pod %q: %s", uuid, strings.Join(errs, "; "))
	}
	return nil
}

// podChains are the chains the reference plugins make for the pod uuid on
// the networks nets and name after both: bridge's masquerade chain and
// portmap's DNAT and SNAT chains (CNI's utils.MustFormatChainNameWithPrefix,
// computed here: that package would link the plugins' netlink and nftables
// code into rkt). An ADD killed after it made one, before the tagged rule
// that jumps to it, leaves it with nothing tagged to find it by.
func podChains(uuid string, nets []string) map[string]bool {
	chains := map[string]bool{}
	for _, n := range nets {
		sum := sha512.Sum512([]byte(n + uuid))
		h := hex.EncodeToString(sum[:])
		for _, prefix := range []string{"CNI-", "CNI-DN-", "CNI-SN-"} {
			chains[(prefix + h)[:28]] = true
		}
	}
	return chains
}

func sweepTable(ctx context.Context, bin, table, uuid string, nets []string) error {
	out, err := exec.CommandContext(ctx, bin+"-save", "-t", table).Output()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s-save -t %s: %w", bin, table, ctx.Err())
		}
		// A table the kernel does not have (e.g. no IPv6 nat) holds no rules.
		return nil
	}
	tag := fmt.Sprintf(`id: \"%s\"`, uuid)
	chains := map[string]bool{}
	own := podChains(uuid, nets)
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(line, ":"); ok {
			if name, _, _ = strings.Cut(name, " "); own[name] {
				chains[name] = true
			}
			continue
		}
		if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, tag) {
			continue
		}
		args := splitRule(line)
		if err := runIPTables(ctx, bin, append([]string{"-t", table, "-D"}, args[1:]...)...); err != nil {
			return err
		}
		for i, a := range args {
			if (a == "-j" || a == "-g") && i+1 < len(args) && strings.HasPrefix(args[i+1], "CNI-") && !sharedChains[args[i+1]] {
				chains[args[i+1]] = true
			}
		}
	}
	for c := range chains {
		if err := runIPTables(ctx, bin, "-t", table, "-F", c); err != nil {
			return err
		}
		if err := runIPTables(ctx, bin, "-t", table, "-X", c); err != nil {
			return err
		}
	}
	return nil
}

func runIPTables(ctx context.Context, bin string, args ...string) error {
	out, err := exec.CommandContext(ctx, bin, append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// splitRule splits an iptables-save rule line into arguments, honouring
// double quotes and backslash escapes inside them.
func splitRule(line string) []string {
	var args []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQuote && c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == '"':
			inQuote, have = !inQuote, true
		case c == ' ' && !inQuote:
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if have {
		args = append(args, cur.String())
	}
	return args
}
