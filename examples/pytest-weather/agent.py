"""A weather agent: the OpenAI SDK's tool loop with one tool. Its client reads
OPENAI_BASE_URL, which the tracereplay fixture sets for each test."""

import os

from openai import OpenAI

TOOLS = [{"type": "function", "function": {"name": "weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def weather(city: str) -> str:
    """The agent's tool (a real one would call a weather service)."""
    if os.environ.get("WEATHER_SERVICE_DOWN"):
        return "error: the weather service is down"
    return "sunny, 21 C"


def run_agent(question: str) -> str:
    client = OpenAI(api_key=os.environ.get("OPENAI_API_KEY", "recorded-runs-need-no-key"))
    messages = [{"role": "system", "content": "You answer weather questions."},
                {"role": "user", "content": question}]
    while True:
        msg = client.chat.completions.create(model="gpt-4.1-mini", messages=messages,
                                             tools=TOOLS).choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            return msg.content
        for call in msg.tool_calls:
            city = __import__("json").loads(call.function.arguments).get("city", "")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": weather(city)})
