"""
title: AI Hub Agent Pipe
author: aihub-provision
version: 0.1.0
description: One model per agent; sends the chat and requested features to it and renders its stream in order.
required_open_webui_version: 0.12.4
global: false
"""

# How a turn is shown (the contract this file keeps)
# ---------------------------------------------------
# The agent's events are recorded as ordered *segments*: text, a tool step (one assistant message
# with one or more calls, each with its result), reasoning, and an error. The segments are rendered
# as Open WebUI assistant content, exactly the markup Open WebUI 0.12.4 reads:
#   - a tool call:  <details type="tool_calls" done=".." id=".." name=".." arguments=".." result="..">
#   - reasoning:    <details type="reasoning" done="true" duration="..">, each line quoted with "> "
#   - an error:     a "> [!CAUTION]" alert at the end, after everything that had streamed.
# Extra attributes (message_id, result_id on tool calls, id on reasoning) carry the AG-UI ids so
# the next turn can rebuild the transcript: parse_content() is the inverse of render_segments().
# A tool block also carries ``sig``, an HMAC of its fields under the HISTORY_SIGNING_KEY valve, bound
# to the chat, the agent, the user and the turn (``turn``): only a block the pipe itself rendered
# becomes a tool call next turn, in that chat, for that agent and user, once; an edited, made-up or
# replayed block reaches the agent as plain text, and "<details" in the agent's own text is written
# as "&lt;details".
# Every key the pipe holds is masked in everything it shows or logs (the Scrubber).
#
# How it streams is the Recorder's docstring.
#
# The modules of agent_pipe/ this file is built from, in order (scripts/build-pipe):
#   constants      what provision and the agents agree on, limits, timings, the errors raised
#   helpers        small conversions, among them the two rules for message content as text
#   segments       what one turn is made of
#   agent_ids      the agent's own message ids, kept with an answer for the next turn's history
#   rendering      segments -> Open WebUI assistant content
#   parsing        stored content -> segments (the inverse)
#   secrets        the Scrubber and TokenMask (masking keys), the Signer (tool blocks)
#   history        Open WebUI's messages -> the agent's messages
#   files          which files the user attached, where they go, as content parts
#   file_store     the request body with files in it; reading them from Open WebUI's store
#   request        who asks, in which chat, under which trace: identity, ids, headers
#   wire           SSE, the OpenAI chunk adapter, AgentStream (bytes in, AG-UI events out)
#   results        a tool result as the text it holds; an AG-UI 1.0 image part
#   recorder       events -> ordered segments and stable output
#   dispatch       what each AG-UI event means for the Recorder, and the table of its handlers
#   usage          token usage in any agent's spelling -> the counts Open WebUI stores
#   outbound       what shows beside the answer: usage, sources, images, steps
#   valves         the AGENTS and API_KEYS valves, parsed once per text
#   transport      the pool, the proxy, the status line, batching, the run
#   dialogs        what a paused run asks the user in Open WebUI's dialogs; the answer read back
#   questions      a run that pauses to ask the user, and is resumed
#   failures       what went wrong, as the text the user reads
#   probe          the admin's probe: can this process reach an agent's backend
#   pipe           the Pipe class Open WebUI calls, last
