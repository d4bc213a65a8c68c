"""Step 7 for people: a stored decision and its trace told as lines (`lines`) and as the
`kuuki why` report (`why`).
"""
