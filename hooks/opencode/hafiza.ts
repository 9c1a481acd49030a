// hafiza for opencode: the session-start profile, and recalled memories on every prompt.
//
// Installed by `hafiza install opencode` into ~/.config/opencode/plugins/
// (removed by `hafiza uninstall opencode`). opencode calls `chat.message`
// when a user message arrives, before the model sees it. This plugin sends
// the prompt to `hafiza hook opencode prompt` as JSON on stdin and, when
// hafiza prints a recall block, adds it to the message as a synthetic text
// part (shown to the model, not typed by the user). Any failure or a slow
// answer means nothing is added: memory must never break a prompt.
// When a session is created it runs the same hook with `start` and puts the
// profile it prints into that session's system prompt.

import type { Plugin } from "@opencode-ai/plugin"
import { spawn } from "node:child_process"

// `hafiza install opencode` rewrites the next two lines with the absolute
// interpreter path (no PATH lookup, no pyenv shim) and the vault, if given.
const COMMAND: string[] = ["hafiza", "hook", "opencode", "prompt"]
const ENV: Record<string, string> = {}
const TIMEOUT_MS = 5000

const START: string[] = [...COMMAND.slice(0, -1), "start"]
const profiles = new Map<string, Promise<string>>()

function runHook(payload: string, cwd: string, command: string[] = COMMAND): Promise<string> {
  return new Promise((resolve) => {
    let child: ReturnType<typeof spawn>
    try {
      child = spawn(command[0], command.slice(1), {
        cwd,
        env: { ...process.env, ...ENV },
        stdio: ["pipe", "pipe", "ignore"],
      })
    } catch {
      resolve("")
      return
    }
    let out = ""
    let settled = false
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      finish("")
    }, TIMEOUT_MS)
    function finish(text: string) {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(text)
    }
    child.on("error", () => finish(""))
    child.stdout!.setEncoding("utf8")
    child.stdout!.on("data", (chunk: string) => {
      out += chunk
    })
    child.on("close", (code: number | null) => finish(code === 0 ? out.trim() : ""))
    child.stdin!.on("error", () => {})
    child.stdin!.end(payload)
  })
}

// opencode stores every part under an id "prt_" + 12 hex digits of time + 14
// random characters; ids sort by time, so this part lands after the prompt.
let counter = 0
function partId(): string {
  const stamp = (BigInt(Date.now()) * 0x1000n + BigInt(++counter % 0x1000)).toString(16).padStart(12, "0")
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
  let tail = ""
  for (let i = 0; i < 14; i++) tail += alphabet[Math.floor(Math.random() * alphabet.length)]
  return `prt_${stamp.slice(-12)}${tail}`
}

function sessionOf(event: any): string | undefined {
  const props = event?.properties ?? {}
  return props.info?.id ?? props.sessionID ?? props.id
}

export const HafizaPlugin: Plugin = async ({ directory }) => ({
  event: async ({ event }: any) => {
    try {
      if (event?.type !== "session.created") return
      const id = sessionOf(event)
      if (!id || profiles.has(id)) return
      const payload = JSON.stringify({ hook_event_name: "session.created", session_id: id, cwd: directory })
      profiles.set(id, runHook(payload, directory, START))
    } catch {
      // fail open: the session starts without a profile
    }
  },
  "experimental.chat.system.transform": async (input: any, output: any) => {
    try {
      const pending = input?.sessionID ? profiles.get(input.sessionID) : undefined
      const text = pending ? await pending : ""
      if (text) output.system.push(text)
    } catch {
      // fail open
    }
  },
  "chat.message": async (input, output) => {
    try {
      const prompt = output.parts
        .filter((part: any) => part.type === "text" && !part.synthetic)
        .map((part: any) => part.text)
        .join("\n")
        .trim()
      if (!prompt) return
      const payload = JSON.stringify({
        hook_event_name: "chat.message",
        session_id: input.sessionID,
        prompt,
        cwd: directory,
      })
      const text = await runHook(payload, directory)
      if (!text) return
      output.parts.push({
        id: partId(),
        sessionID: output.message.sessionID,
        messageID: output.message.id,
        type: "text",
        text,
        synthetic: true,
      } as any)
    } catch {
      // fail open: the prompt goes on without recall
    }
  },
})
