// Explicit command map (oclif "explicit" strategy): lets the CLI be bundled into one executable.
// Keys are command ids. Topic commands use `:` in the id (`secret:set`); users type them with a
// space (`toolgate secret set`) because package.json sets oclif's topicSeparator to ' '.
import AuditVerify from './commands/audit/verify.ts'
import AuthExplain from './commands/auth/explain.ts'
import AuthToken from './commands/auth/token.ts'
import AuthzCheck from './commands/authz/check.ts'
import AuthzLint from './commands/authz/lint.ts'
import ClientAdd from './commands/client/add.ts'
import ClientList from './commands/client/list.ts'
import ClientRemove from './commands/client/remove.ts'
import ClientSetup from './commands/client/setup.ts'
import DoctorNetwork from './commands/doctor/network.ts'
import List from './commands/list.ts'
import RegistryList from './commands/registry/list.ts'
import RegistryPublish from './commands/registry/publish.ts'
import RegistrySearch from './commands/registry/search.ts'
import RegistryShow from './commands/registry/show.ts'
import RegistryStatus from './commands/registry/status.ts'
import Logs from './commands/logs.ts'
import Gateway from './commands/gateway.ts'
import Proxy from './commands/proxy.ts'
import ProxyStdio from './commands/proxy/stdio.ts'
import ProxyTunnel from './commands/proxy/tunnel.ts'
import Rm from './commands/rm.ts'
import Run from './commands/run.ts'
import Stop from './commands/stop.ts'
import Serve from './commands/serve.ts'
import Version from './commands/version.ts'
import SecretDelete from './commands/secret/delete.ts'
import SecretGet from './commands/secret/get.ts'
import SecretList from './commands/secret/list.ts'
import SecretSet from './commands/secret/set.ts'
import SecretSetup from './commands/secret/setup.ts'

export const COMMANDS = {
  'audit:verify': AuditVerify,
  'auth:explain': AuthExplain,
  'auth:token': AuthToken,
  'authz:check': AuthzCheck,
  'authz:lint': AuthzLint,
  'client:add': ClientAdd,
  'client:list': ClientList,
  'client:remove': ClientRemove,
  'client:setup': ClientSetup,
  'doctor:network': DoctorNetwork,
  gateway: Gateway,
  list: List,
  logs: Logs,
  proxy: Proxy,
  'proxy:stdio': ProxyStdio,
  'proxy:tunnel': ProxyTunnel,
  'registry:list': RegistryList,
  'registry:publish': RegistryPublish,
  'registry:search': RegistrySearch,
  'registry:show': RegistryShow,
  'registry:status': RegistryStatus,
  rm: Rm,
  run: Run,
  stop: Stop,
  serve: Serve,
  'secret:delete': SecretDelete,
  'secret:get': SecretGet,
  'secret:list': SecretList,
  'secret:set': SecretSet,
  'secret:setup': SecretSetup,
  version: Version,
}
