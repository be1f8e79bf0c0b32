import type {IncomingMessage, ServerResponse} from 'node:http'
import type {Principal} from '../auth/types.ts'
import {PublishRefused, type Publisher, type WriteFacts} from '../registry-publish/publisher.ts'
import type {WriteRoute} from '../registry-publish/paths.ts'
import {readJsonBody} from '../registry-publish/request-json.ts'
import {sendText} from './respond.ts'

/**
 * Answers a write route (publish, status) with the entry as the registry now serves it. A
 * server.json that fails the schema is a 400 whose `errors` name every problem by JSON pointer;
 * other failures are thrown for the main handler's error mapping.
 */
export async function answerWrite(
  req: IncomingMessage,
  res: ServerResponse,
  route: WriteRoute,
  caller: Principal | undefined,
  publisher: Publisher,
  facts: WriteFacts,
): Promise<void> {
  // Which registry and where its writes go, before the body is read (docs: 404, 403 first).
  publisher.sourceFor(route.registry)
  const body = await readJsonBody(req)
  try {
    const entry =
      route.kind === 'publish'
        ? await publisher.publish(route.registry, body, caller, facts)
        : await publisher.setStatus(
            route.registry,
            route.serverName,
            route.version,
            body,
            caller,
            facts,
          )
    sendText(res, 200, JSON.stringify(entry))
  } catch (err) {
    if (!(err instanceof PublishRefused)) throw err
    sendText(res, 400, JSON.stringify({error: err.message, errors: err.problems}))
  }
}
