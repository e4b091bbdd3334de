/**
 * Preloaded by `bun test` (bunfig.toml): what the whole run leaves behind is removed once, after
 * the last test file. An `afterAll` at the top level of a preload runs once for the run, not per
 * file (checked on Bun 1.4.5), and `bun test` emits no process `exit` event to hang it on.
 */
import { afterAll } from "bun:test";
import { removeTestIndexRoot } from "./helpers/hub.ts";

afterAll(removeTestIndexRoot);
