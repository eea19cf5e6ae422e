"""`harness collect`: human studies in YAML (passage cloze, sentence completion, the next-token games), served to
participants, stored in SQLite and exported as the files the tasks read (docs/collect.md)."""
