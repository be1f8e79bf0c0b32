// Explicit command map (oclif "explicit" strategy): lets the CLI be bundled into one executable.
// Keys are command ids; a space in the id is the topic separator (`proxy stdio`).
import Serve from './commands/serve.ts'

export const COMMANDS = {
  serve: Serve,
}
