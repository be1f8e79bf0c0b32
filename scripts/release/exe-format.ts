/**
 * Just enough PE and Mach-O reading to prepare Node's signed Windows and macOS binaries for SEA
 * injection on a Linux machine, and to check the result structurally (neither format runs here).
 *
 * Node's official binaries are signed. Injecting the blob invalidates that signature, and a stale
 * signature is worse than none: Windows reports the file as tampered, and macOS kills it. So the
 * signature is removed before injection (the same as `signtool remove /s` or
 * `codesign --remove-signature`); a release signs again with its own identity (docs/distribution.md).
 */

const PE32_PLUS = 0x20b
const IMAGE_FILE_MACHINE_AMD64 = 0x8664
const SECURITY_DIRECTORY = 4

export interface PeInfo {
  machine: 'x64' | 'other'
  pe32plus: boolean
  /** File offset and size of the Authenticode certificate table (0, 0 when unsigned). */
  security: {offset: number; size: number}
  sections: string[]
}

function peOffsets(buf: Buffer): {opt: number; coff: number} {
  if (buf.length < 0x40 || buf.toString('latin1', 0, 2) !== 'MZ')
    throw new Error('not a PE file (no MZ)')
  const pe = buf.readUInt32LE(0x3c)
  if (buf.toString('latin1', pe, pe + 4) !== 'PE\0\0')
    throw new Error('not a PE file (no PE header)')
  return {coff: pe + 4, opt: pe + 24}
}

function securityEntry(buf: Buffer, opt: number): number {
  if (buf.readUInt16LE(opt) !== PE32_PLUS) throw new Error('not a PE32+ (64-bit) executable')
  const count = buf.readUInt32LE(opt + 108)
  if (count <= SECURITY_DIRECTORY) throw new Error('PE has no security data directory slot')
  return opt + 112 + SECURITY_DIRECTORY * 8
}

export function readPe(buf: Buffer): PeInfo {
  const {coff, opt} = peOffsets(buf)
  const entry = securityEntry(buf, opt)
  const nSections = buf.readUInt16LE(coff + 2)
  const sectionTable = opt + buf.readUInt16LE(coff + 16)
  const sections: string[] = []
  for (let i = 0; i < nSections; i++) {
    const at = sectionTable + i * 40
    sections.push(buf.toString('latin1', at, at + 8).replace(/\0+$/, ''))
  }
  return {
    machine: buf.readUInt16LE(coff) === IMAGE_FILE_MACHINE_AMD64 ? 'x64' : 'other',
    pe32plus: buf.readUInt16LE(opt) === PE32_PLUS,
    security: {offset: buf.readUInt32LE(entry), size: buf.readUInt32LE(entry + 4)},
    sections,
  }
}

/** The PE without its Authenticode certificate table (which PE keeps at the end of the file). */
export function removePeSignature(buf: Buffer): Buffer {
  const {opt} = peOffsets(buf)
  const entry = securityEntry(buf, opt)
  const offset = buf.readUInt32LE(entry)
  const size = buf.readUInt32LE(entry + 4)
  if (size === 0) return buf
  // The table is the last thing in a signed file, padded to 8 bytes.
  if (offset + size > buf.length || buf.length - (offset + size) > 8)
    throw new Error(`certificate table at ${offset}+${size} is not at the end of the file`)
  const out = Buffer.from(buf.subarray(0, offset))
  out.writeUInt32LE(0, entry)
  out.writeUInt32LE(0, entry + 4)
  // The optional-header CheckSum covered the signed file; 0 means "not computed" for executables.
  out.writeUInt32LE(0, opt + 64)
  return out
}

/**
 * Names of the PE's resources, as `<type>/<name>` (`10/NODE_SEA_BLOB`: an RT_RCDATA resource named
 * NODE_SEA_BLOB is where Node looks for the SEA blob on Windows).
 */
export function peResourceNames(buf: Buffer): string[] {
  const {coff, opt} = peOffsets(buf)
  const rsrcRva = buf.readUInt32LE(opt + 112 + 2 * 8)
  if (rsrcRva === 0) return []
  const nSections = buf.readUInt16LE(coff + 2)
  const sectionTable = opt + buf.readUInt16LE(coff + 16)
  let base = -1
  for (let i = 0; i < nSections; i++) {
    const at = sectionTable + i * 40
    const va = buf.readUInt32LE(at + 12)
    const vsize = Math.max(buf.readUInt32LE(at + 8), buf.readUInt32LE(at + 16))
    if (rsrcRva >= va && rsrcRva < va + vsize) base = buf.readUInt32LE(at + 20) + (rsrcRva - va)
  }
  if (base < 0) throw new Error('resource directory is outside every section')
  // An IMAGE_RESOURCE_DIRECTORY: named entries, then id entries; a name field with the high bit
  // set is the offset (from the resource section start) of a length-prefixed UTF-16LE string.
  const entries = (dir: number) => {
    const count = buf.readUInt16LE(dir + 12) + buf.readUInt16LE(dir + 14)
    return Array.from({length: count}, (_, i) => {
      const nameField = buf.readUInt32LE(dir + 16 + i * 8)
      const target = buf.readUInt32LE(dir + 20 + i * 8)
      let name = String(nameField)
      if (nameField & 0x80000000) {
        const at = base + (nameField & 0x7fffffff)
        name = buf.toString('utf16le', at + 2, at + 2 + buf.readUInt16LE(at) * 2)
      }
      const sub = target & 0x80000000 ? base + (target & 0x7fffffff) : undefined
      return {name, sub}
    })
  }
  const names: string[] = []
  for (const type of entries(base)) {
    if (type.sub === undefined) continue
    for (const res of entries(type.sub)) names.push(`${type.name}/${res.name}`)
  }
  return names
}

const MH_MAGIC_64 = 0xfeedfacf
const LC_SEGMENT_64 = 0x19
const LC_CODE_SIGNATURE = 0x1d
const CPU_TYPES: Record<number, 'x64' | 'arm64'> = {0x01000007: 'x64', 0x0100000c: 'arm64'}

export interface MachOInfo {
  arch: 'x64' | 'arm64' | 'other'
  segments: {name: string; sections: string[]}[]
  signed: boolean
}

interface LoadCommand {
  cmd: number
  at: number
  size: number
}

function loadCommands(buf: Buffer): LoadCommand[] {
  if (buf.length < 32 || buf.readUInt32LE(0) !== MH_MAGIC_64)
    throw new Error('not a 64-bit little-endian Mach-O file')
  const ncmds = buf.readUInt32LE(16)
  const out: LoadCommand[] = []
  let at = 32
  for (let i = 0; i < ncmds; i++) {
    const size = buf.readUInt32LE(at + 4)
    out.push({cmd: buf.readUInt32LE(at), at, size})
    at += size
  }
  return out
}

function segName(buf: Buffer, at: number): string {
  return buf.toString('latin1', at, at + 16).replace(/\0+$/, '')
}

export function readMachO(buf: Buffer): MachOInfo {
  const cmds = loadCommands(buf)
  const segments = cmds
    .filter((c) => c.cmd === LC_SEGMENT_64)
    .map((c) => {
      const nsects = buf.readUInt32LE(c.at + 64)
      const sections = Array.from({length: nsects}, (_, i) => segName(buf, c.at + 72 + i * 80))
      return {name: segName(buf, c.at + 8), sections}
    })
  return {
    arch: CPU_TYPES[buf.readUInt32LE(4)] ?? 'other',
    segments,
    signed: cmds.some((c) => c.cmd === LC_CODE_SIGNATURE),
  }
}

/**
 * The Mach-O without its code signature: the LC_CODE_SIGNATURE command is dropped (later commands
 * move up), the signature bytes at the end of __LINKEDIT are cut off and __LINKEDIT shrinks to match.
 */
export function removeMachOSignature(buf: Buffer): Buffer {
  const cmds = loadCommands(buf)
  const sig = cmds.find((c) => c.cmd === LC_CODE_SIGNATURE)
  if (!sig) return buf
  const dataoff = buf.readUInt32LE(sig.at + 8)
  const datasize = buf.readUInt32LE(sig.at + 12)
  if (dataoff + datasize !== buf.length)
    throw new Error('the code signature is not at the end of the file')
  const out = Buffer.from(buf.subarray(0, dataoff))
  const end = 32 + buf.readUInt32LE(20)
  out.copy(out, sig.at, sig.at + sig.size, end)
  out.fill(0, end - sig.size, end)
  out.writeUInt32LE(buf.readUInt32LE(16) - 1, 16)
  out.writeUInt32LE(buf.readUInt32LE(20) - sig.size, 20)
  for (const c of loadCommands(out)) {
    if (c.cmd !== LC_SEGMENT_64 || segName(out, c.at + 8) !== '__LINKEDIT') continue
    const fileoff = Number(out.readBigUInt64LE(c.at + 40))
    const filesize = BigInt(dataoff - fileoff)
    out.writeBigUInt64LE(filesize, c.at + 48)
    // vmsize stays page-aligned over the shorter file contents.
    out.writeBigUInt64LE((filesize + 0x3fffn) & ~0x3fffn, c.at + 32)
  }
  return out
}
