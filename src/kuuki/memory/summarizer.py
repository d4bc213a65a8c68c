"""The rolling summarizer: channel context, channel/thread memories, workspace memories.

Hybrid trigger (seed 002): every SUMMARIZE_EVERY_N_MESSAGES messages, or
SUMMARIZE_EVERY_N_MINUTES after the first message since the last summary, whichever comes
first. The update is incremental — the previous summary, history and recent events plus
only the new messages — and runs as a background job. One LLM call per channel update
yields the context (summary, mood, topics), the channel's history and recent events, and
the summaries of threads that got new messages. When a public channel's memories change,
the workspace memories are regenerated (debounced) from public channels only.

Every answer is checked against its schema and for content; a bad answer leaves memory
as it was, keeps the new messages for the next attempt, and is recorded with its reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kuuki.clock import Clock, TimerHandle
from kuuki.domain import Channel, DecisionTrace, GuardRecord, Message, Visibility
from kuuki.guard.memory import MemoryCheck, channel_language
from kuuki.guard.scaffold import Scaffold
from kuuki.llm.base import LLM, ChatMessage, Completion
from kuuki.llm.record import PromptDump, call_llm
from kuuki.memory.book import MemoryBook, thread_key
from kuuki.memory.channel_context import ChannelContext
from kuuki.memory.jobs import JobRecord, Jobs, completion_text, failure_reason, trace_for
from kuuki.memory.keywords import keywords_of
from kuuki.memory.summary_answers import (
    SUMMARY_SCHEMA,
    SummaryAnswer,
    has_words,
    read_channel_summary,
)
from kuuki.memory.workspace import summarize_workspace
from kuuki.prompts import Prompts

MAX_PENDING = 200
WORKSPACE_DEBOUNCE_S = 60.0


@dataclass(slots=True)
class _ChannelState:
    channel: Channel
    pending: list[Message] = field(default_factory=list)
    # Messages since the last attempt: after a failed attempt the kept messages must not
    # re-trigger on every new message.
    count: int = 0
    timer: TimerHandle | None = None
    running: bool = False
    again: bool = False


class Summarizer:
    """Keeps each channel's context and memories current, in the background."""

    def __init__(
        self,
        *,
        llm: LLM | None,
        prompts: Prompts,
        book: MemoryBook,
        clock: Clock,
        jobs: Jobs,
        persona_name: str,
        every_n_messages: int,
        every_n_minutes: float,
        dump: PromptDump | None = None,
        max_tokens: int = 400,
        scaffold: Scaffold | None = None,
        languages: frozenset[str] = frozenset({"ja", "en"}),
    ) -> None:
        self.llm = llm
        self.prompts = prompts
        self.scaffold = scaffold or Scaffold.from_prompts(prompts)
        self.languages = languages  # what the model writes; other channels are skipped
        self.book = book
        self.clock = clock
        self.jobs = jobs
        self.persona_name = persona_name
        self.every_n = every_n_messages
        self.every_s = every_n_minutes * 60
        self.dump = dump
        self.max_tokens = max_tokens
        self._channels: dict[str, _ChannelState] = {}
        self._contexts: dict[str, ChannelContext] = {}
        self._workspace_timers: dict[str, TimerHandle] = {}
        self._epoch = 0
        self.on_change: Callable[[Channel], None] | None = None

    def context(self, channel_id: str) -> ChannelContext | None:
        ctx = self._contexts.get(channel_id)
        if ctx is None:
            rec = self.book.get("channel", channel_id, "context")
            if rec is None:
                return None
            ctx = self._contexts[channel_id] = ChannelContext.from_json(channel_id, rec.content)
        return ctx

    def reload(self) -> None:
        """Drop cached contexts (the store changed them); a summary being written from the
        old ones is discarded when it comes back (someone was forgotten meanwhile)."""
        self._contexts.clear()
        self._epoch += 1

    def drop_user(self, user_id: str) -> None:
        """A forgotten person's messages leave every summary queue (kuuki.memory.forgetting)."""
        for st in self._channels.values():
            st.pending = [m for m in st.pending if m.user.id != user_id]

    def waiting(self, channel_id: str) -> int:
        """Messages seen in a channel that the next summary will take in."""
        st = self._channels.get(channel_id)
        return 0 if st is None else len(st.pending)

    def writing(self, channel_id: str) -> bool:
        """True while a summary of the channel is being written."""
        st = self._channels.get(channel_id)
        return st is not None and st.running

    # --- triggers ------------------------------------------------------------------------

    def observe(self, channel: Channel, msg: Message) -> None:
        if self.llm is None or not msg.text.strip():
            return
        st = self._channels.get(channel.id)
        if st is None:
            st = self._channels[channel.id] = _ChannelState(channel)
        st.channel = channel
        st.pending.append(msg)
        del st.pending[:-MAX_PENDING]
        st.count += 1
        if st.count >= self.every_n:
            self._trigger(st)
        elif st.timer is None:
            st.timer = self.clock.call_later(self.every_s, lambda: self._on_timer(st))

    async def _on_timer(self, st: _ChannelState) -> None:
        st.timer = None
        if st.pending:
            self._trigger(st)

    def _trigger(self, st: _ChannelState) -> None:
        st.count = 0
        if st.timer is not None:
            st.timer.cancel()
            st.timer = None
        if st.running:
            st.again = True
            return
        st.running = True
        self.jobs.spawn(f"summary-{st.channel.id}", lambda: self._run(st))

    async def _run(self, st: _ChannelState) -> None:
        try:
            await self.summarize(st.channel, st)
        finally:
            st.running = False
        if st.again and st.pending:
            st.again = False
            self._trigger(st)

    async def flush(self, channel_id: str) -> None:
        """Summarize a channel's pending messages now (tests, the CLI)."""
        st = self._channels.get(channel_id)
        if st is not None and st.pending and not st.running:
            self._trigger(st)

    # --- the channel update ----------------------------------------------------------------

    async def summarize(self, channel: Channel, st: _ChannelState) -> bool:
        assert self.llm is not None
        batch = list(st.pending)
        now = self.clock.now()
        epoch = self._epoch
        trace = trace_for("summary", channel.id, now)
        previous = self.context(channel.id)
        threads: dict[str, list[Message]] = {}
        for m in batch:
            if m.thread:
                threads.setdefault(m.thread, []).append(m)
        lang = channel_language([m.text for m in batch if not m.user.is_bot],
                                self.prompts.language)
        if lang not in self.languages:
            st.pending.clear()
            self.jobs.record(JobRecord("summary", channel.id, now, False,
                                       f"skipped: {self.llm.name} does not write {lang}",
                                       skipped=True))
            return False
        completion = await self._ask(channel, batch, threads, previous, lang, now, trace)
        data = completion.data if completion is not None else None
        if not isinstance(data, dict):
            self._record("summary", channel, now, False, failure_reason(trace, "no answer"), trace)
            return False
        check = MemoryCheck(self.scaffold, lang)
        answer = read_channel_summary(check, data, threads)
        trace.guard.append(GuardRecord("summary", check.ok, "" if check.ok else "memory",
                                       check.reason(), completion_text(completion)))
        if not check.ok:
            self._record("summary", channel, now, False, f"rejected: {check.reason()}", trace)
            return False
        if epoch != self._epoch:  # written from what was just forgotten; the rest is kept
            st.again = True
            self._record("summary", channel, now, False,
                         "discarded: memory was reloaded while it was written", trace)
            return False
        changed = await self._store(channel, batch, threads, previous, answer, now)
        # Only what was summarized leaves the queue; messages that arrived meanwhile stay.
        done = {m.id for m in batch}
        st.pending = [m for m in st.pending if m.id not in done]
        self._record("summary", channel, now, True, f"{len(batch)} messages", trace)
        if changed and channel.visibility is Visibility.PUBLIC:
            self._schedule_workspace(channel.workspace)
        if changed and self.on_change is not None:
            self.on_change(channel)
        return True

    async def _ask(
        self, channel: Channel, batch: list[Message], threads: dict[str, list[Message]],
        previous: ChannelContext | None, lang: str, now: datetime, trace: DecisionTrace,
    ) -> Completion | None:
        """One call for the channel update: the previous context and memories, the new
        messages, the summaries of the threads they went to."""
        assert self.llm is not None
        system = self.prompts.render(
            "summary",
            language=lang,
            persona_name=self.persona_name,
            channel=channel,
            previous=previous,
            history=self.book.text("channel", channel.id, "long_term"),
            recent_events=self.book.text("channel", channel.id, "short_term"),
            messages=batch,
            threads={t: self.book.text("thread", thread_key(channel.id, t), "summary")
                     for t in threads},
            now=now,
        )
        return await call_llm(
            self.llm, trace, "memory_summary", [ChatMessage("system", system)],
            json_schema=SUMMARY_SCHEMA, max_tokens=self.max_tokens, temperature=0.2,
            dump=self.dump_for(channel.id),
        )

    async def _store(
        self,
        channel: Channel,
        batch: list[Message],
        threads: dict[str, list[Message]],
        previous: ChannelContext | None,
        answer: SummaryAnswer,
        now: datetime,
    ) -> bool:
        """Write a checked channel update: the context, the channel's history and recent
        events, the threads' summaries. True when any stored memory changed."""
        ctx = previous or ChannelContext(channel.id)
        for m in batch:
            if not m.user.is_bot:
                ctx.note_speaker(m.user.id, m.user.name)
        ctx.summary = answer.summary
        ctx.mood = answer.mood if has_words(answer.mood) else ctx.mood
        ctx.topic_keywords = answer.topics or keywords_of((m.text for m in batch), limit=6)
        ctx.last_updated = now
        ctx.message_count_since_update = 0
        self._contexts[channel.id] = ctx
        # Everyone whose words ever went into the channel's summaries, not only who is
        # active now: forgetting a person must find every summary that may quote them.
        before = self.book.get("channel", channel.id, "context")
        sources = list(dict.fromkeys([
            *(before.source_user_ids if before is not None else ()), *ctx.active_user_ids,
            *(m.user.id for m in batch if not m.user.is_bot),
        ]))
        changed = await self._put(channel, "channel", channel.id, "context", ctx.to_json(),
                                  sources, now)
        for kind, key in (("long_term", "history"), ("short_term", "recent_events")):
            text = answer.notes[key]
            if has_words(text):
                changed |= await self._put(channel, "channel", channel.id, kind, text, sources,
                                           now)
        for thread, text in answer.threads.items():
            if has_words(text):
                users = list(dict.fromkeys(m.user.id for m in threads[thread]))
                changed |= await self._put(channel, "thread", thread_key(channel.id, thread),
                                           "summary", text, users, now)
        return changed

    async def _put(self, channel: Channel, scope: str, scope_id: str, kind: str, content: Any,
                   sources: list[str], now: datetime) -> bool:
        return await self.book.put(
            scope, scope_id, kind, content,
            visibility=channel.visibility, workspace=channel.workspace,
            source_channel_id=channel.id, source_user_ids=sources, at=now,
        )

    # --- the workspace ---------------------------------------------------------------------

    def _schedule_workspace(self, workspace: str) -> None:
        old = self._workspace_timers.pop(workspace, None)
        if old is not None:
            old.cancel()

        async def fire() -> None:
            self._workspace_timers.pop(workspace, None)
            self.jobs.spawn(f"workspace-{workspace}", lambda: self.summarize_workspace(workspace))

        self._workspace_timers[workspace] = self.clock.call_later(WORKSPACE_DEBOUNCE_S, fire)

    async def summarize_workspace(self, workspace: str) -> bool:
        """Regenerate the workspace memories from its public channels' memories."""
        return await summarize_workspace(self, workspace)

    @property
    def epoch(self) -> int:
        """Bumped by `reload`: an answer written from an older epoch is discarded."""
        return self._epoch

    def dump_for(self, label: str) -> PromptDump | None:
        dump = self.dump
        if dump is None:
            return None
        return lambda purpose, messages: dump(f"{label}-{purpose}", messages)

    def _record(self, job: str, channel: Channel, now: datetime, ok: bool, reason: str,
                trace: Any) -> None:
        self.jobs.record(JobRecord(job, channel.id, now, ok, reason, trace))

    def cancel_timers(self) -> None:
        for st in self._channels.values():
            if st.timer is not None:
                st.timer.cancel()
                st.timer = None
        for handle in self._workspace_timers.values():
            handle.cancel()
        self._workspace_timers.clear()
