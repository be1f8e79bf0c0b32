import {readFileSync} from 'node:fs'
import {Args} from '@oclif/core'
import {ToolgateError} from '../../lib/errors.ts'
import {BaseCommand} from '../base-command.ts'
import {stdio} from './list.ts'
import {registryFlags} from './registry-flags.ts'

// A server.json is a few KiB; the registry refuses more than 256 KiB anyway.
const MAX_FILE_BYTES = 256 * 1024

export default class RegistryPublish extends BaseCommand {
  static override description =
    "Publish a server.json to a registry's managed source (toolgate serve); it is listed when this returns."

  static override examples = [
    '<%= config.bin %> registry publish server.json --registry https://registry.example.com/registry/team --remote-auth --remote-auth-issuer https://idp.example.com',
    'cat server.json | <%= config.bin %> registry publish - --remote-auth-bearer-token-file ./token',
  ]

  static override args = {
    FILE: Args.string({description: 'The server.json file, or - for stdin.', required: true}),
  }

  static override flags = {...registryFlags}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(RegistryPublish)
    const {configureFromFlags} = await import('../../lib/network/settings.ts')
    configureFromFlags(flags)
    const r = await import('../../lib/registry-client/commands.ts')
    r.registryBase(flags, true) // which registry, before waiting on stdin
    const where = args.FILE === '-' ? 'stdin' : args.FILE
    let text: string
    try {
      text = readFileSync(args.FILE === '-' ? 0 : args.FILE, 'utf8')
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error'
      throw new ToolgateError('ERR_FILE_UNREADABLE', `${where}: cannot read (${code})`)
    }
    if (Buffer.byteLength(text) > MAX_FILE_BYTES)
      throw new ToolgateError('ERR_USAGE', `${where}: larger than 256 KiB; not a server.json`)
    await r.withRegistry(flags, true, this.makeLogger(flags), (client) =>
      r.publishFile(client, text, where, flags.json, stdio),
    )
  }
}
