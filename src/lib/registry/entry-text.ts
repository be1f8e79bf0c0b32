import {OFFICIAL_META_KEY} from './types.ts'

const META_HEAD = `,"_meta":{${JSON.stringify(OFFICIAL_META_KEY)}:{"status":`

/**
 * A list entry `{"server":…,"_meta":{official}}` as JSON text from its stored parts, without
 * parsing the document: byte-identical to JSON.stringify of the entry object, since `serverJson`
 * was itself written by JSON.stringify (record.ts prepareRecord), which a parse/stringify round
 * trip reproduces exactly, and the official values go through JSON.stringify here. Both stores
 * answer their text reads with it. V8 joins the parts without copying until the body is encoded.
 */
export function entryText(
  serverJson: string,
  status: string,
  publishedAt: string,
  updatedAt: string,
  isLatest: boolean,
): string {
  return (
    '{"server":' +
    serverJson +
    META_HEAD +
    JSON.stringify(status) +
    ',"publishedAt":' +
    JSON.stringify(publishedAt) +
    ',"updatedAt":' +
    JSON.stringify(updatedAt) +
    (isLatest ? ',"isLatest":true}}}' : ',"isLatest":false}}}')
  )
}
