#!/usr/bin/env node
// Production entry: the compiled commands in dist/ (npm run build), or the TypeScript sources when
// dist/ is absent (see launch.js).
import {launch} from './launch.js'

await launch({entryUrl: import.meta.url})
