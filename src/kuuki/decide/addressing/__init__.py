"""Who a message is for: by name, mention, reply, DM or the bot's thread (``names``); by
what the learned models read in the room (``reading``); by context (``context``)."""
