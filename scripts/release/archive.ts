/**
 * Reproducible release archives: the same files give the same bytes on every machine and every
 * run. Entries are sorted by name, every timestamp is the build's fixed time (the commit date),
 * owners are 0/root, modes are 0755 (executables) or 0644, and the gzip header carries no time or
 * file name. Written here rather than with tar/zip so no host tool's defaults leak in.
 */
import {crc32, deflateRawSync, gzipSync} from 'node:zlib'

export interface Entry {
  name: string
  data: Buffer
  executable: boolean
}

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0'
}

function tarHeader(e: Entry, mtime: number): Buffer {
  if (Buffer.byteLength(e.name) > 100) throw new Error(`archive entry name too long: ${e.name}`)
  const h = Buffer.alloc(512)
  h.write(e.name, 0, 100, 'utf8')
  h.write(octal(e.executable ? 0o755 : 0o644, 8), 100, 'latin1')
  h.write(octal(0, 8), 108, 'latin1')
  h.write(octal(0, 8), 116, 'latin1')
  h.write(octal(e.data.length, 12), 124, 'latin1')
  h.write(octal(mtime, 12), 136, 'latin1')
  h.write('        ', 148, 'latin1')
  h.write('0', 156, 'latin1')
  h.write('ustar\0', 257, 'latin1')
  h.write('00', 263, 'latin1')
  h.write('root', 265, 'latin1')
  h.write('root', 297, 'latin1')
  let sum = 0
  for (const b of h) sum += b
  h.write(octal(sum, 7) + ' ', 148, 'latin1')
  return h
}

function sorted(entries: Entry[]): Entry[] {
  return [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/** A ustar archive, gzip level 9 with a zero mtime and no name in the header. */
export function tarGz(entries: Entry[], mtime: number): Buffer {
  const parts: Buffer[] = []
  for (const e of sorted(entries)) {
    parts.push(tarHeader(e, mtime), e.data)
    const pad = (512 - (e.data.length % 512)) % 512
    if (pad) parts.push(Buffer.alloc(pad))
  }
  parts.push(Buffer.alloc(1024))
  const gz = gzipSync(Buffer.concat(parts), {level: 9})
  // RFC 1952: MTIME (bytes 4-7) 0 = none; OS (byte 9) 255 = unknown, so no host OS is recorded.
  gz.writeUInt32LE(0, 4)
  gz[9] = 255
  return gz
}

function dosTime(epochSeconds: number): {time: number; date: number} {
  const d = new Date(Math.max(epochSeconds, 315532800) * 1000)
  return {
    time: (d.getUTCHours() << 11) | (d.getUTCMinutes() << 5) | Math.floor(d.getUTCSeconds() / 2),
    date: ((d.getUTCFullYear() - 1980) << 9) | ((d.getUTCMonth() + 1) << 5) | d.getUTCDate(),
  }
}

/** A zip (deflate) archive; "made by" Unix so the executable bit survives `unzip`. */
export function zip(entries: Entry[], mtime: number): Buffer {
  const {time, date} = dosTime(mtime)
  const locals: Buffer[] = []
  const central: Buffer[] = []
  let offset = 0
  for (const e of sorted(entries)) {
    const name = Buffer.from(e.name, 'utf8')
    const body = deflateRawSync(e.data, {level: 9})
    const crc = crc32(e.data)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(0x0800, 6) // UTF-8 names
    local.writeUInt16LE(8, 8)
    local.writeUInt16LE(time, 10)
    local.writeUInt16LE(date, 12)
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(body.length, 18)
    local.writeUInt32LE(e.data.length, 22)
    local.writeUInt16LE(name.length, 26)
    locals.push(local, name, body)
    const cd = Buffer.alloc(46)
    cd.writeUInt32LE(0x02014b50, 0)
    cd.writeUInt16LE((3 << 8) | 20, 4)
    cd.writeUInt16LE(20, 6)
    cd.writeUInt16LE(0x0800, 8)
    cd.writeUInt16LE(8, 10)
    cd.writeUInt16LE(time, 12)
    cd.writeUInt16LE(date, 14)
    cd.writeUInt32LE(crc, 16)
    cd.writeUInt32LE(body.length, 20)
    cd.writeUInt32LE(e.data.length, 24)
    cd.writeUInt16LE(name.length, 28)
    cd.writeUInt32LE(((0o100000 | (e.executable ? 0o755 : 0o644)) << 16) >>> 0, 38)
    cd.writeUInt32LE(offset, 42)
    central.push(cd, name)
    offset += local.length + name.length + body.length
  }
  const cdBuf = Buffer.concat(central)
  const n = entries.length
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(n, 8)
  end.writeUInt16LE(n, 10)
  end.writeUInt32LE(cdBuf.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, cdBuf, end])
}
