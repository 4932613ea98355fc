"""make_problems.py OUT: arithmetic word problems for the chat walkthrough.

Writes OUT/train.jsonl and OUT/val.jsonl (conversations in nanochat's
format: the assistant computes with the python tool, then answers GSM8K's
way, "#### 42") and OUT/test.jsonl (new problems in GSM8K's layout, the
solution's calculator annotation included). The numbers are seeded; the
test problems are not among the training ones.
"""
import json
import os
import random
import sys

NAMES = ["Ann", "Bob", "Cal", "Dee", "Eli", "Fay", "Gus", "Ivy", "Jon", "Kim"]
THINGS = ["apples", "books", "coins", "pens", "shells", "stamps", "cards"]

def problem(rng):
    """A question, the expression that answers it and the value."""
    name, things = rng.choice(NAMES), rng.choice(THINGS)
    kind = rng.randrange(3)
    if kind == 0:
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        return (f"{name} has {a} {things} and gets {b} more. "
                f"How many {things} does {name} have now?", f"{a}+{b}", a + b)
    if kind == 1:
        a = rng.randint(10, 99)
        b = rng.randint(2, a - 1)
        return (f"{name} had {a} {things} and gave {b} away. "
                f"How many {things} are left?", f"{a}-{b}", a - b)
    a, b = rng.randint(2, 12), rng.randint(2, 12)
    return (f"Each box holds {a} {things}. How many {things} are in {b} "
            f"boxes?", f"{a}*{b}", a * b)

def conversation(question, expression, value):
    return {"messages": [
        {"role": "user", "content": question},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me compute: "},
            {"type": "python", "text": expression},
            {"type": "python_output", "text": str(value)},
            {"type": "text", "text": f"\n#### {value}"}]}]}

def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(2602)
    seen, sets = set(), {"train": 3000, "val": 100, "test": 100}
    for name, count in sets.items():
        with open(os.path.join(out, f"{name}.jsonl"), "w") as f:
            written = 0
            while written < count:
                question, expression, value = problem(rng)
                if question in seen:
                    continue
                seen.add(question)
                if name == "test":
                    record = {"question": question, "answer":
                              f"{expression}=<<{expression}={value}>>{value}"
                              f"\n#### {value}"}
                else:
                    record = conversation(question, expression, value)
                f.write(json.dumps(record) + "\n")
                written += 1
    print(f"wrote {out}/{{train,val,test}}.jsonl: "
          + ", ".join(f"{n} {k}" for k, n in sets.items()))

main()
