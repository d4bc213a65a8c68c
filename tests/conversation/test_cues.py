from kuuki.conversation import cues


def test_questions_en_and_ja() -> None:
    assert cues.is_question("anyone know how to fix grub?")
    assert cues.is_question("how do I mount a usb stick")
    assert cues.is_question("Is it possible to dual boot")
    assert cues.is_question("これ何？")
    assert cues.is_question("明日は来ますか。")
    assert cues.is_question("それって本当なの？")
    assert cues.is_question("どこで買えるんだっけ")
    assert not cues.is_question("I rebooted and it works now")
    assert not cues.is_question("ok")
    assert not cues.is_question("それしか")
    assert not cues.is_question("今日は晴れです。")


def test_thanks_and_greetings() -> None:
    assert cues.is_thanks("thanks a lot!")
    assert cues.is_thanks("ty")
    assert cues.is_thanks("ありがとうございます")
    assert cues.is_thanks("助かりました")
    assert not cues.is_thanks("they are the best")
    assert cues.is_greeting("hello all")
    assert cues.is_greeting("こんにちは〜")
    assert not cues.is_greeting("oh hello there")


def test_leading_addressee_irc_and_at() -> None:
    assert cues.leading_addressee("hwilde: did you try ifconfig?") == "hwilde"
    assert cues.leading_addressee("crimsun, I'm afraid not") == "crimsun"
    assert cues.leading_addressee("@alice look at this") == "alice"
    assert cues.leading_addressee("no idea what you mean") is None


def test_japanese_honorific_names() -> None:
    assert cues.leading_addressee("佐藤さん、昨日どうだった？") == "佐藤"
    assert cues.honorific_names("そういえば田中さんは来るの？") == ["田中"]
    assert cues.honorific_names("それでたなかさんが言ってた") == ["たなか"]
    assert cues.honorific_names("くうちゃん、おはよう") == ["くう"]
    assert cues.honorific_names("山田様、よろしくお願いします") == ["山田"]
    assert cues.addressees("@kuu 鈴木くんに聞いて") == ["kuu", "鈴木"]


def test_calls_name_only_counts_address_not_mention() -> None:
    names = ("Kuu", "くう")
    assert cues.calls_name("Kuu, what do you think?", names)
    assert cues.calls_name("kuu: hi", names)
    assert cues.calls_name("くうさん、おすすめある？", names)
    assert cues.calls_name("ねえ @Kuu", names)
    assert cues.calls_name("ところでくうちゃんはどう思う？", names)
    assert not cues.calls_name("I told kuu about it", names)
    assert not cues.calls_name("Kuubernetes is hard", names)
    assert not cues.calls_name("anything", ())


def test_match_names_exact_then_unique_prefix() -> None:
    known = ["hwilde", "Hikaru79", "hikaru_", "yohannes"]
    assert cues.match_names(["HWILDE"], known) == ["hwilde"]
    assert cues.match_names(["yoh"], known) == ["yohannes"]
    assert cues.match_names(["hik"], known) == []  # ambiguous prefix
    assert cues.match_names(["yo"], known) == []  # too short to guess
