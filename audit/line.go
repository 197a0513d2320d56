package audit

import "strconv"

// appendLine appends r's audit line, newline included.
func (r *record) appendLine(b []byte) []byte {
	t := r.time
	b = t.AppendFormat(b, "2006-01-02 15:04:05")
	ms := t.Nanosecond() / 1e6
	b = append(b, ',', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	b = append(b, " INFO FSNamesystem.audit: allowed="...)
	b = strconv.AppendBool(b, r.allowed)
	b = append(b, "\tugi="...)
	b = appendField(b, r.f[fUser])
	if len(r.f[fUser]) > 0 && len(r.f[fAuth]) > 0 {
		b = append(b, " (auth:"...)
		b = append(b, r.f[fAuth]...)
		b = append(b, ')')
	}
	b = append(b, "\tip="...)
	if len(r.f[fAddr]) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(append(b, '/'), r.f[fAddr]...)
	}
	b = append(b, "\tcmd="...)
	b = appendField(b, r.f[fCmd])
	b = append(b, "\tsrc="...)
	b = appendField(b, r.f[fSrc])
	b = append(b, "\tdst="...)
	b = appendField(b, r.f[fDst])
	b = append(b, "\tperm="...)
	b = r.appendPerm(b)
	b = append(b, "\tproto="...)
	b = appendField(b, r.f[fProto])
	return append(b, '\n')
}

// appendField appends s, or "null" for none. Tabs, newlines and
// backslashes in s (a path may hold them) are escaped, so one event is
// one line of tab-separated fields.
func appendField(b, s []byte) []byte {
	if len(s) == 0 {
		return append(b, "null"...)
	}
	for _, c := range s {
		switch c {
		case '\t':
			b = append(b, `\t`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\\':
			b = append(b, `\\`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendPerm appends "owner:group:rwxr-xr-x" (t in the last place for the
// sticky bit), as HDFS's FsPermission prints it, or "null" for none.
func (r *record) appendPerm(b []byte) []byte {
	owner, group := r.f[fOwner], r.f[fGroup]
	if len(owner) == 0 && len(group) == 0 && r.mode == 0 {
		return append(b, "null"...)
	}
	b = appendField(b, owner)
	b = append(b, ':')
	b = appendField(b, group)
	b = append(b, ':')
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		if r.mode&(1<<(8-i)) != 0 {
			b = append(b, rwx[i])
		} else {
			b = append(b, '-')
		}
	}
	if r.mode&0o1000 != 0 {
		b[len(b)-1] = 't'
	}
	return b
}
