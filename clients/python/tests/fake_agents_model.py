"""A scripted ``agents`` Model: returns canned Responses output items, calls no LLM."""

from __future__ import annotations

from typing import Any, AsyncIterator, List

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_reasoning_item import Summary


def text_message(text: str, msg_id: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=msg_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[], logprobs=[])],
    )


def tool_call(name: str, arguments: str, call_id: str, item_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=item_id, type="function_call", name=name, arguments=arguments, call_id=call_id, status="completed"
    )


def reasoning(summary: str, item_id: str) -> ResponseReasoningItem:
    return ResponseReasoningItem(
        id=item_id, type="reasoning", summary=[Summary(type="summary_text", text=summary)]
    )


class ScriptedModel(Model):
    """Answers each model call with the next list of output items; records the inputs it saw."""

    def __init__(self, turns: List[List[Any]]) -> None:
        self.turns = list(turns)
        self.inputs: List[Any] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None,
                           **kwargs: Any) -> ModelResponse:
        self.inputs.append(input)
        if not self.turns:
            raise AssertionError("the scripted model ran out of turns")
        output = self.turns.pop(0)
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("streaming is not scripted")
