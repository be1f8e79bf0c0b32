import {Args, Flags} from '@oclif/core'

/** The `<name>` argument of `secret set|get|delete`. */
export const secretNameArg = {name: Args.string({description: 'Secret name.', required: true})}

/** `--system`: lets set/get/delete touch toolgate's reserved namespace (its own logins, registrations). */
export const reservedNameFlag = {
  system: Flags.boolean({
    description: "Allow a name in toolgate's reserved namespace (__toolgate/…).",
    default: false,
  }),
}
