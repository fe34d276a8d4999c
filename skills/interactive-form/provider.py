"""The interactive-form skill's tool: ask the user questions in a browser form, get the answers.

Browser protocol: `skill:request` with `action: "form"` and
`data: {"title": str | null, "questions": [{"id", "label", "type", "required", "choices"?}]}`
(`type` is `text`, `choice` or `multi_choice`; `choices` only for the latter two). The browser
answers `skill:response` with `success: true` and `result: {"answers": {id: value}}` (a string
for text and choice, a list of strings for multi_choice, omitted or null when left blank), or
`result: {"cancelled": true}` when the user dismisses the form; `success: false` when it cannot
show the form. Answers are checked against the questions before the model sees them.
"""

# No `from __future__ import annotations`: LangChain reads the tool function's hints at run time.

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, StringConstraints, ValidationError, model_validator

from chat_shell.skills.provider import ProviderContext, SkillToolProvider
from chat_shell.tools.pending_requests import FrontendError, PendingRequestError, RequestTimeout

MAX_ANSWER_CHARS = 4000  # a text answer goes into the prompt; keep it bounded

DESCRIPTION = (
    "Show the user a form with one or more questions (free text, single or multiple choice) "
    "and wait for their answers. Use it instead of guessing when a decision or requirement is "
    "the user's to give. Returns the answers as JSON keyed by question id."
)

Choice = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class Question(BaseModel):
    id: str = Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$",
        description="Unique key of this question's answer, snake_case, e.g. `deploy_target`.",
    )
    label: str = Field(
        min_length=1, max_length=300, description="The question as the user reads it."
    )
    type: Literal["text", "choice", "multi_choice"] = Field(
        default="text",
        description="`text`: free text; `choice`: exactly one of `choices`; "
        "`multi_choice`: any number of `choices`.",
    )
    choices: list[Choice] | None = Field(
        default=None,
        max_length=20,
        description="2 to 20 distinct options, for choice and multi_choice only.",
    )
    required: bool = Field(default=True, description="Whether the user must answer it.")

    @model_validator(mode="after")
    def _choices_fit_the_type(self) -> Self:
        if self.type == "text":
            if self.choices:
                raise ValueError(f"text question {self.id!r} takes no choices")
        elif not self.choices or len(self.choices) < 2:
            raise ValueError(f"{self.type} question {self.id!r} needs at least 2 choices")
        elif len(set(self.choices)) != len(self.choices):
            raise ValueError(f"question {self.id!r} has duplicate choices")
        return self


class AskUserArgs(BaseModel):
    questions: list[Question] = Field(
        min_length=1, max_length=10, description="The questions, in the order shown."
    )
    title: str | None = Field(
        default=None, max_length=200, description="A short heading saying what the form is for."
    )

    @model_validator(mode="after")
    def _ids_are_unique(self) -> Self:
        ids = [q.id for q in self.questions]
        if len(set(ids)) != len(ids):
            raise ValueError("question ids must be unique")
        return self


Answer = str | list[str] | None


class InteractiveFormProvider(SkillToolProvider):
    provider_name = "interactive_form"
    supported_tools = ("ask_user",)

    def create_tool(
        self, tool_name: str, context: ProviderContext, config: Mapping[str, Any]
    ) -> BaseTool:
        if tool_name != "ask_user":
            raise ValueError(f"unsupported tool {tool_name!r}")
        timeout_s = float(config.get("timeout_s", 300))

        async def ask_user(questions: list[Question], title: str | None = None) -> str:
            form = AskUserArgs(questions=questions, title=title)
            questions_data = [q.model_dump(exclude_none=True) for q in form.questions]
            payload = {"title": form.title, "questions": questions_data}
            try:
                result = await context.ask_frontend("form", payload, timeout_s)
            except RequestTimeout as exc:
                raise ToolException(
                    f"the browser did not answer within {timeout_s:g} s: the user has not "
                    "filled in the form. Ask once in plain text instead, briefly."
                ) from exc
            except FrontendError as exc:
                reason = exc.details.get("error") or exc.message
                raise ToolException(
                    f"the browser could not show the form: {reason}. Ask in plain text instead."
                ) from exc
            except PendingRequestError as exc:
                raise ToolException(
                    f"the browser cannot be reached ({exc.message}). Ask in plain text instead."
                ) from exc
            if isinstance(result, Mapping) and result.get("cancelled") is True:
                return (
                    "The user cancelled the form without answering. Do not send it again: "
                    "continue with assumptions you state, or stop if you cannot."
                )
            try:
                answers = check_answers(form.questions, result)
            except ValueError as exc:
                raise ToolException(f"the browser sent a malformed answer: {exc}") from exc
            return json.dumps({"answers": answers}, ensure_ascii=False)

        return StructuredTool(
            name="ask_user",
            description=DESCRIPTION,
            args_schema=AskUserArgs,
            coroutine=ask_user,
            handle_tool_error=True,
            handle_validation_error=_invalid_arguments,
        )


def check_answers(questions: list[Question], result: object) -> dict[str, Answer]:
    """Every question's answer in its declared shape; ValueError names the first misfit."""
    answers = result.get("answers") if isinstance(result, Mapping) else None
    if not isinstance(answers, Mapping):
        raise ValueError("expected an object with an `answers` object")
    return {q.id: _check(q, answers.get(q.id)) for q in questions}


def _check(question: Question, value: object) -> Answer:
    if isinstance(value, str):
        value = value.strip()
    if value is None or value == "" or value == []:
        if question.required:
            raise ValueError(f"required question {question.id!r} has no answer")
        return None
    choices = question.choices or []
    if question.type == "text":
        if not isinstance(value, str):
            raise ValueError(f"question {question.id!r} expects text")
        return value[:MAX_ANSWER_CHARS]
    if question.type == "choice":
        if value not in choices:
            raise ValueError(f"question {question.id!r} expects one of its choices")
        return str(value)
    if not isinstance(value, list) or any(v not in choices for v in value):
        raise ValueError(f"question {question.id!r} expects a list of its choices")
    return [c for c in choices if c in value]  # in the order offered, without duplicates


def _invalid_arguments(exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
    )
    return f"invalid arguments: {problems}"
