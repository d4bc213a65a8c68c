"""Fitting the learned models on the corpora (``learn``: `kuuki train`) and scoring them on
labelled chats (``evaluate``: `kuuki eval addressee`). Not loaded by the running bot."""
