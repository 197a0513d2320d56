// Package topology maps datanodes to their failure domains: a rack path
// such as /dc1/rack7 for every datanode, read from a mapping file the
// operator writes (HDFS's net.topology.table.file.name), never from the
// datanode's own claim.
//
// # The mapping file
//
// One mapping a line: a key, white space, a rack path. A key is a datanode
// id, a "host:port" address or a bare host; the first of those that the
// file names decides (id, then address, then host). A rack path is "/"
// followed by one to eight "/"-separated components of letters, digits,
// '.', '_' and '-'. '#' starts a comment; blank lines are skipped. A
// datanode the file does not name is in DefaultRack. For example:
//
//	# datacenter 1
//	dn-a1        /dc1/rack1
//	10.0.1.17    /dc1/rack1
//	10.0.2.5:9866 /dc1/rack2
//
// A file that does not parse is refused whole: Load returns an error
// naming its line, and a Resolver keeps the table it had.
package topology
