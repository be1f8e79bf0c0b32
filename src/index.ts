// Explicit command map (oclif "explicit" strategy): lets the CLI be bundled into one executable.
// Keys are command ids; a space in the id is the topic separator (`proxy stdio`).
import Proxy from './commands/proxy.ts'
import Serve from './commands/serve.ts'
import SecretDelete from './commands/secret/delete.ts'
import SecretGet from './commands/secret/get.ts'
import SecretList from './commands/secret/list.ts'
import SecretSet from './commands/secret/set.ts'
import SecretSetup from './commands/secret/setup.ts'

export const COMMANDS = {
  proxy: Proxy,
  serve: Serve,
  'secret:delete': SecretDelete,
  'secret:get': SecretGet,
  'secret:list': SecretList,
  'secret:set': SecretSet,
  'secret:setup': SecretSetup,
}
