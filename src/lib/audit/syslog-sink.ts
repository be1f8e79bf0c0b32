import {createSocket, type Socket as UdpSocket} from 'node:dgram'
import {hostname} from 'node:os'
import {connect, type Socket} from 'node:net'
import {ToolgateError} from '../errors.ts'

/**
 * `--audit-log udp://host:port | tcp://host:port | unix:PATH`: audit records to a syslog
 * receiver (rsyslog, syslog-ng, a SIEM) as RFC 5424 messages — facility "log audit" (13),
 * severity notice for denials and refusals, info otherwise, MSGID the event, the record as JSON
 * in MSG. Over TCP and unix stream sockets the messages are octet-counted (RFC 6587).
 *
 * Sending never waits: records queue up to a bound (4,096 or 8 MiB) while the receiver is slow or
 * away; past it they are dropped and counted. A lost connection is retried with backoff.
 */
export type SyslogTarget =
  | {kind: 'udp'; host: string; port: number}
  | {kind: 'tcp'; host: string; port: number}
  | {kind: 'unix'; path: string}

export function parseSyslogTarget(text: string): SyslogTarget | undefined {
  if (text.startsWith('unix:')) {
    const path = text.slice(5).replace(/^\/\/(?=\/)/, '')
    if (!path.startsWith('/'))
      throw new ToolgateError('ERR_USAGE', `--audit-log ${text}: use unix:/absolute/path`)
    return {kind: 'unix', path}
  }
  const m = /^(udp|tcp):\/\/(\[[^\]]+\]|[^:/]+):(\d{1,5})\/?$/.exec(text)
  if (!m) {
    if (/^[a-z]+:\/\//.test(text))
      throw new ToolgateError(
        'ERR_USAGE',
        `--audit-log ${text.slice(0, 80)}: use udp://host:port, tcp://host:port or unix:/path for syslog, a file path, or -`,
      )
    return undefined
  }
  const port = Number(m[3])
  if (port < 1 || port > 65535)
    throw new ToolgateError('ERR_USAGE', `--audit-log ${text}: bad port`)
  return {kind: m[1] as 'udp' | 'tcp', host: m[2]!.replace(/^\[|\]$/g, ''), port}
}

const MAX_QUEUE = 4096
const MAX_QUEUE_BYTES = 8 * 1024 * 1024
const FACILITY = 13 // log audit

export class SyslogSink {
  dropped = 0
  private readonly target: SyslogTarget
  private readonly host =
    hostname()
      .replace(/[^\x21-\x7e]/g, '')
      .slice(0, 255) || '-'
  private readonly app: string
  private udp: UdpSocket | undefined
  private stream: Socket | undefined
  private connected = false
  private queue: Buffer[] = []
  private queued = 0
  private retry: NodeJS.Timeout | undefined
  private backoff = 250
  private closed = false
  /** Called for every record that could not be sent (the auditor counts and logs them). */
  onDrop: ((err: Error) => void) | undefined

  constructor(target: SyslogTarget, app = 'toolgate') {
    this.target = target
    this.app = app.replace(/[^\x21-\x7e]/g, '').slice(0, 48) || 'toolgate'
    if (target.kind === 'udp') {
      this.udp = createSocket(target.host.includes(':') ? 'udp6' : 'udp4')
      // Errors of a send reach its callback (a drop); nothing else is worth a report.
      this.udp.on('error', () => undefined)
      this.udp.unref()
    } else this.open()
  }

  write(record: Record<string, unknown> & {event?: unknown; outcome?: unknown}): void {
    const notice = record.outcome === 'denied' || record.outcome === 'failure'
    const pri = FACILITY * 8 + (notice ? 5 : 6)
    const msgid =
      String(record.event ?? '-')
        .replace(/[^\x21-\x7e]/g, '')
        .slice(0, 32) || '-'
    const time = typeof record.time === 'string' ? record.time : new Date().toISOString()
    const line = `<${pri}>1 ${time} ${this.host} ${this.app} ${process.pid} ${msgid} - ${JSON.stringify(record)}`
    const message = Buffer.from(line)
    if (this.udp) {
      // One datagram per message; a receiver that is away loses it (UDP's nature), counted on error.
      this.udp.send(
        message,
        this.target.kind === 'udp' ? this.target.port : 0,
        this.target.kind === 'udp' ? this.target.host : '',
        (err) => {
          if (err) this.drop(err)
        },
      )
      return
    }
    const framed = Buffer.concat([Buffer.from(`${message.length} `), message])
    if (this.connected && this.queue.length === 0 && this.stream!.writableNeedDrain === false) {
      this.stream!.write(framed)
      return
    }
    if (this.queue.length >= MAX_QUEUE || this.queued + framed.length > MAX_QUEUE_BYTES) {
      this.drop(new Error('the syslog receiver is away or slow; queue full'))
      return
    }
    this.queue.push(framed)
    this.queued += framed.length
  }

  close(): void {
    this.closed = true
    clearTimeout(this.retry)
    this.flush()
    this.stream?.end()
    this.udp?.close()
  }

  private drop(err: Error): void {
    this.dropped++
    this.onDrop?.(err)
  }

  private open(): void {
    const t = this.target
    const socket =
      t.kind === 'unix'
        ? connect({path: t.path})
        : connect({host: (t as {host: string}).host, port: (t as {port: number}).port})
    socket.setTimeout(10_000, () => socket.destroy(new Error('syslog connection timed out')))
    socket.unref()
    socket.on('connect', () => {
      socket.setTimeout(0)
      this.connected = true
      this.backoff = 250
      this.flush()
    })
    socket.on('drain', () => this.flush())
    // A receiver that is away is retried (close → backoff); records wait in the queue meanwhile.
    socket.on('error', () => undefined)
    socket.on('close', () => {
      this.connected = false
      if (this.closed) return
      this.retry = setTimeout(() => this.open(), this.backoff)
      this.retry.unref()
      this.backoff = Math.min(this.backoff * 2, 30_000)
    })
    this.stream = socket
  }

  private flush(): void {
    while (this.connected && this.queue.length > 0) {
      const next = this.queue.shift()!
      this.queued -= next.length
      if (!this.stream!.write(next)) return
    }
  }
}
