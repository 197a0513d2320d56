package security

import (
	"github.com/blockfs/blockfs/api"
)

// Rule says who may call one endpoint (a gRPC full method name or an HTTP
// path). Every endpoint of every blockfs server has exactly one Rule in
// [Policy]; an endpoint without one is refused to everyone.
//
// Beyond the role, each role carries its standing check, applied by the
// [Authorizer] wherever that role is admitted:
//   - namenode: the caller's name is a namenode of this cluster
//     ([Env.IsMember]), except on an Open rule, and except on a SelfJoin rule
//     when the name equals the id in the request (a node adding itself);
//   - datanode: when the request names a datanode (a datanode_id field, or
//     Register's node), that id equals the caller's name;
//   - user: on a Superuser rule, the caller is the superuser or in the
//     supergroup ([Env.IsSuperuser]).
type Rule struct {
	// Public endpoints need no identity at all (/metrics, /healthz).
	Public bool
	// Roles that may call; empty with Public false means nobody.
	Roles []Role
	// Superuser restricts the user role to the superuser and supergroup.
	Superuser bool
	// SelfJoin admits a namenode that is not yet a member when the request's
	// id is its own name (Admin.AddServer on --join).
	SelfJoin bool
	// Open skips the namenode membership check (health, reflection).
	Open bool
	// Token notes that the handler also checks a block token (DataService);
	// the authorizer only checks the role.
	Token string
	// Write marks a namespace-mutating endpoint: AuthConfig.Admit is told
	// a user's call (its own or delegated) is a write, which the
	// namenode's per-user write rate limit and fair scheduler limit.
	// Datanode and namenode callers are not limited.
	Write bool
	// StaticUser serves, under simple auth, a request that names no user
	// as the static web user (AuthConfig.HTTPStaticUser), with that user's
	// permissions and no others: the web UI's pages, so that a browser's
	// first visit works, as HDFS's web UI browses as dr.who. Under mTLS a
	// request without a certificate is refused as on any rule.
	StaticUser bool
	// Delegated admits, besides Roles, a datanode that presents a redirect
	// token (DelegationKey metadata) admitting the call: the call then runs
	// as the token's user, through the user's checks (WebHDFS CREATE,
	// APPEND and OPEN; see Redirect.Admits).
	Delegated bool
}

// Allows reports whether r admits role (before the role's standing check).
func (r Rule) Allows(role Role) bool {
	for _, x := range r.Roles {
		if x == role {
			return true
		}
	}
	return false
}

var (
	anyRole  = []Role{RoleNamenode, RoleDatanode, RoleUser}
	users    = []Role{RoleUser}
	nodes    = []Role{RoleNamenode}
	dnodes   = []Role{RoleDatanode}
	usersDNs = []Role{RoleUser, RoleDatanode}
	admins   = []Role{RoleUser, RoleNamenode}
)

// Policy returns the one table of who may call what, for the namenode's and
// the datanode's gRPC services and HTTP endpoints. docs/SECURITY.md prints
// it; a test checks that every registered method has a row.
func Policy() map[string]Rule {
	p := map[string]Rule{
		// ClientService: users. ReportBadBlocks also takes datanodes, which
		// report replicas they found corrupt (a user's report only makes a
		// replica suspect; see namenode ReportBadBlocks).
		api.ClientService_Mkdirs_FullMethodName:            {Roles: users, Write: true},
		api.ClientService_Create_FullMethodName:            {Roles: users, Write: true, Delegated: true},
		api.ClientService_AddBlock_FullMethodName:          {Roles: users, Write: true, Delegated: true},
		api.ClientService_Complete_FullMethodName:          {Roles: users, Write: true, Delegated: true},
		api.ClientService_PrepareFile_FullMethodName:       {Roles: users, Write: true},
		api.ClientService_PutFile_FullMethodName:           {Roles: users, Write: true},
		api.ClientService_AbandonBlock_FullMethodName:      {Roles: users, Write: true, Delegated: true},
		api.ClientService_Append_FullMethodName:            {Roles: users, Write: true, Delegated: true},
		api.ClientService_GetBlockLocations_FullMethodName: {Roles: users, Delegated: true},
		api.ClientService_GetFileInfo_FullMethodName:       {Roles: users, Delegated: true},
		api.ClientService_ListStatus_FullMethodName:        {Roles: users},
		api.ClientService_Delete_FullMethodName:            {Roles: users, Write: true},
		api.ClientService_Rename_FullMethodName:            {Roles: users, Write: true},
		api.ClientService_SetPermission_FullMethodName:     {Roles: users, Write: true},
		api.ClientService_SetOwner_FullMethodName:          {Roles: users, Write: true},
		api.ClientService_ReportBadBlocks_FullMethodName:   {Roles: usersDNs, Write: true},
		// Open: a namenode joining reads whom to admit on its Raft port
		// (what any user and the web UI's open /namenodes page may read).
		api.ClientService_ClusterStatus_FullMethodName: {Roles: anyRole, Open: true},
		// Leases: the writer's calls (a WebHDFS datanode writes for its
		// user); RecoverLease by any user with write access to the file.
		api.ClientService_RenewLease_FullMethodName:             {Roles: users, Write: true, Delegated: true},
		api.ClientService_Fsync_FullMethodName:                  {Roles: users, Write: true, Delegated: true},
		api.ClientService_UpdateBlockForPipeline_FullMethodName: {Roles: users, Write: true, Delegated: true},
		api.ClientService_UpdatePipeline_FullMethodName:         {Roles: users, Write: true, Delegated: true},
		api.ClientService_RecoverLease_FullMethodName:           {Roles: users, Write: true},
		// Quotas: any user may ask; SetQuota is refused by the namespace
		// (replicated, so every namenode agrees) unless the caller is a
		// superuser, as HDFS's namenode answers it (AccessControlException).
		api.ClientService_SetQuota_FullMethodName:          {Roles: users, Write: true},
		api.ClientService_GetContentSummary_FullMethodName: {Roles: users},
		api.ClientService_GetQuotaUsage_FullMethodName:     {Roles: users},
		// HDFS snapshots (namenode/hsnapshot): any user may ask; the
		// namespace refuses AllowSnapshot and DisallowSnapshot unless the
		// caller is a superuser, and the others unless they own the
		// directory (or are a superuser), as HDFS's namenode does.
		api.ClientService_AllowSnapshot_FullMethodName:              {Roles: users, Write: true},
		api.ClientService_DisallowSnapshot_FullMethodName:           {Roles: users, Write: true},
		api.ClientService_CreateSnapshot_FullMethodName:             {Roles: users, Write: true},
		api.ClientService_DeleteSnapshot_FullMethodName:             {Roles: users, Write: true},
		api.ClientService_RenameSnapshot_FullMethodName:             {Roles: users, Write: true},
		api.ClientService_GetSnapshottableDirListing_FullMethodName: {Roles: users},
		// Extended attributes, times and truncate (namenode/attrs): any
		// user; the namespace applies HDFS's rules to the inode (user.
		// needs r or w on it, trusted. the superuser). The server's
		// defaults and figures: any user, as HDFS's namenode answers them.
		api.ClientService_SetXAttr_FullMethodName:          {Roles: users, Write: true},
		api.ClientService_GetXAttrs_FullMethodName:         {Roles: users},
		api.ClientService_ListXAttrs_FullMethodName:        {Roles: users},
		api.ClientService_RemoveXAttr_FullMethodName:       {Roles: users, Write: true},
		api.ClientService_SetTimes_FullMethodName:          {Roles: users, Write: true},
		api.ClientService_Truncate_FullMethodName:          {Roles: users, Write: true},
		api.ClientService_GetServerDefaults_FullMethodName: {Roles: users},
		api.ClientService_GetFsStats_FullMethodName:        {Roles: users},

		// Admin: the superuser; a member namenode forwarding a superuser's
		// call to the leader; AddServer also a namenode adding itself.
		api.Admin_AddServer_FullMethodName:          {Roles: admins, Superuser: true, SelfJoin: true},
		api.Admin_RemoveServer_FullMethodName:       {Roles: admins, Superuser: true},
		api.Admin_TransferLeadership_FullMethodName: {Roles: admins, Superuser: true},
		api.Admin_Snapshot_FullMethodName:           {Roles: admins, Superuser: true},
		// A walk of the whole namespace: the superuser only.
		api.Admin_NamespaceHash_FullMethodName: {Roles: admins, Superuser: true},
		// The replicated deny list (revoke.go): the superuser only.
		api.Admin_Revoke_FullMethodName:      {Roles: admins, Superuser: true},
		api.Admin_Unrevoke_FullMethodName:    {Roles: admins, Superuser: true},
		api.Admin_ListRevoked_FullMethodName: {Roles: admins, Superuser: true},
		// Safe mode (namenode/safemode): the superuser; everyone sees the
		// state in ClusterStatus.
		api.Admin_SafeMode_FullMethodName: {Roles: admins, Superuser: true},
		// Datanode admin states (namenode/decommission): the superuser;
		// everyone sees them in ClusterStatus.
		api.Admin_Decommission_FullMethodName: {Roles: admins, Superuser: true},
		api.Admin_Recommission_FullMethodName: {Roles: admins, Superuser: true},
		api.Admin_Maintenance_FullMethodName:  {Roles: admins, Superuser: true},
		api.Admin_RefreshNodes_FullMethodName: {Roles: admins, Superuser: true},
		// The balancer (package balancer): the superuser starts, watches
		// and stops it; a member namenode forwards to the leader.
		api.Admin_StartBalancer_FullMethodName:    {Roles: admins, Superuser: true},
		api.Admin_BalancerProgress_FullMethodName: {Roles: admins, Superuser: true},
		api.Admin_StopBalancer_FullMethodName:     {Roles: admins, Superuser: true},

		// NamenodeInternal: member namenodes only. A forwarded command
		// carries its caller, so anyone else could act as any user.
		api.NamenodeInternal_Apply_FullMethodName:     {Roles: nodes},
		api.NamenodeInternal_ReadIndex_FullMethodName: {Roles: nodes},

		// DatanodeProtocol: datanodes, each only as itself.
		api.DatanodeProtocol_Register_FullMethodName:               {Roles: dnodes},
		api.DatanodeProtocol_Heartbeat_FullMethodName:              {Roles: dnodes},
		api.DatanodeProtocol_BlockReport_FullMethodName:            {Roles: dnodes},
		api.DatanodeProtocol_IncrementalBlockReport_FullMethodName: {Roles: dnodes},
		api.DatanodeProtocol_GetKeys_FullMethodName:                {Roles: dnodes},
		// The primary of a block recovery reports it, as itself.
		api.DatanodeProtocol_CommitBlockSynchronization_FullMethodName: {Roles: dnodes},

		// DataService (on datanodes): a block token decides what is read or
		// written. Clients write and read; datanodes forward pipelines and
		// replicas; TransferBlock is the namenode ordering a copy. ReadBlock
		// also takes a datanode: one serving a WebHDFS OPEN reads the file's
		// replicas with the read token its user got.
		api.DataService_WriteBlock_FullMethodName:    {Roles: usersDNs, Token: "write token (user), or a copy token naming this datanode (datanode)"},
		api.DataService_ReadBlock_FullMethodName:     {Roles: usersDNs, Token: "read token for the block's inode"},
		api.DataService_TransferBlock_FullMethodName: {Roles: nodes, Token: "copy token"},
		// Block recovery: the primary datanode asks the replicas' datanodes,
		// with the namenode's recovery token naming them.
		api.DataService_InitReplicaRecovery_FullMethodName:        {Roles: dnodes, Token: "recovery token naming this datanode"},
		api.DataService_UpdateReplicaUnderRecovery_FullMethodName: {Roles: dnodes, Token: "recovery token naming this datanode"},

		// Health checking and reflection: any authenticated caller, so that
		// grpcurl and ghz work with any cluster certificate.
		"/grpc.health.v1.Health/Check":                                   {Roles: anyRole, Open: true},
		"/grpc.health.v1.Health/Watch":                                   {Roles: anyRole, Open: true},
		"/grpc.health.v1.Health/List":                                    {Roles: anyRole, Open: true},
		"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo":      {Roles: anyRole, Open: true},
		"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": {Roles: anyRole, Open: true},

		// HTTP: operational read-only data, public like HDFS's /jmx; bind the
		// HTTP port to a management network. Under mTLS the namenode serves
		// them over TLS on the same port as its UI, with no client
		// certificate needed.
		"GET /metrics": {Public: true},
		"GET /healthz": {Public: true},

		// The namenode's web UI (namenode/webui), read-only. Cluster pages
		// are operational data for any authenticated role; browse shows the
		// namespace and runs as the user, through the same permission checks
		// as GetFileInfo, ListStatus and GetBlockLocations. The stylesheet is
		// public so that a refusal page is styled too. Under simple auth a
		// browser that names no user sees them as the static web user.
		"GET /{$}":              {Roles: anyRole, Open: true, StaticUser: true},
		"GET /namenodes":        {Roles: anyRole, Open: true, StaticUser: true},
		"GET /datanodes":        {Roles: anyRole, Open: true, StaticUser: true},
		"GET /datanodes/{id}":   {Roles: anyRole, Open: true, StaticUser: true},
		"GET /browse/{path...}": {Roles: users, StaticUser: true},
		"GET /static/{file}":    {Public: true},

		// WebHDFS (Hadoop's REST API) on both servers' HTTP ports, as users.
		// On the namenode each op then runs as the user through the same
		// checks as its RPC; CREATE, APPEND and OPEN answer 307 to a datanode
		// with a redirect token. On a datanode only those three are served, and
		// only with a redirect token issued to this datanode for this op and
		// path, unused, and (mTLS) for the certificate's user.
		"GET /webhdfs/v1/":    {Roles: users, Token: "datanode: redirect token (OPEN)"},
		"PUT /webhdfs/v1/":    {Roles: users, Token: "datanode: redirect token (CREATE)"},
		"POST /webhdfs/v1/":   {Roles: users, Token: "datanode: redirect token (APPEND)"},
		"DELETE /webhdfs/v1/": {Roles: users},
	}
	addHadoopRows(p)
	return p
}
