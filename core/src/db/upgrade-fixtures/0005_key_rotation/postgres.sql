--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: activity_log_append_only(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.activity_log_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
      begin raise exception 'activity_log is append-only'; end $$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: activity_log; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.activity_log (
    sequence bigint NOT NULL,
    event_id text NOT NULL,
    recorded_by text NOT NULL,
    event_type text NOT NULL,
    subject_id text,
    data_point_id text,
    attribute text,
    application_id text NOT NULL,
    application_user text,
    data_store_name text,
    data_store_server text,
    data_store_entity_name text,
    country text,
    subdivision text,
    city text,
    report_only integer NOT NULL,
    event_time text NOT NULL,
    recorded_date text NOT NULL,
    summary text,
    hash text NOT NULL
);


--
-- Name: alerts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alerts (
    id text NOT NULL,
    rule_key text NOT NULL,
    level text NOT NULL,
    message text NOT NULL,
    entity_id text,
    attribute text,
    datapoint_id text,
    event_type text NOT NULL,
    created_date text NOT NULL
);


--
-- Name: applications; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.applications (
    id text NOT NULL,
    name text NOT NULL,
    api_key_hash text NOT NULL,
    attributes text NOT NULL,
    admin integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: attribute_definitions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.attribute_definitions (
    key text NOT NULL,
    name text,
    hint text,
    schema text NOT NULL,
    repeatable integer DEFAULT 0 NOT NULL,
    indexed integer DEFAULT 0 NOT NULL,
    immutable integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: datapoint_regulations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.datapoint_regulations (
    datapoint_id text NOT NULL,
    regulation text NOT NULL
);


--
-- Name: datapoint_tags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.datapoint_tags (
    datapoint_id text NOT NULL,
    tag text NOT NULL
);


--
-- Name: datapoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.datapoints (
    id text NOT NULL,
    entity_id text NOT NULL,
    attribute text NOT NULL,
    definition_key text NOT NULL,
    structure_root_id text,
    report_only integer DEFAULT 0 NOT NULL,
    sensitivity text NOT NULL,
    subject_key_id text,
    ciphertext bytea,
    blind_index text,
    country text,
    subdivision text,
    city text,
    expires_at text,
    auto_delete integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: definition_entity_types; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.definition_entity_types (
    definition_key text NOT NULL,
    entity_type text NOT NULL
);


--
-- Name: definition_regulations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.definition_regulations (
    definition_key text NOT NULL,
    regulation text NOT NULL
);


--
-- Name: definition_tags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.definition_tags (
    definition_key text NOT NULL,
    tag text NOT NULL
);


--
-- Name: encryption_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.encryption_keys (
    id text NOT NULL,
    public_key_pem text NOT NULL,
    status text NOT NULL,
    created_date text NOT NULL
);


--
-- Name: entities; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.entities (
    id text NOT NULL,
    type text NOT NULL,
    legal_hold integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    updated_date text NOT NULL
);


--
-- Name: entity_prohibitions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.entity_prohibitions (
    entity_id text NOT NULL,
    operation text NOT NULL,
    rule_key text NOT NULL,
    created_date text NOT NULL
);


--
-- Name: entity_tags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.entity_tags (
    entity_id text NOT NULL,
    tag text NOT NULL
);


--
-- Name: entity_types; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.entity_types (
    key text NOT NULL,
    name text,
    description text,
    system integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: idle_retention; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.idle_retention (
    entity_id text NOT NULL,
    definition_key text NOT NULL,
    days integer NOT NULL,
    next_check text NOT NULL
);


--
-- Name: kysely_migration; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.kysely_migration (
    name character varying(255) NOT NULL,
    "timestamp" character varying(255) NOT NULL
);


--
-- Name: kysely_migration_lock; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.kysely_migration_lock (
    id character varying(255) NOT NULL,
    is_locked integer DEFAULT 0 NOT NULL
);


--
-- Name: regulations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.regulations (
    key text NOT NULL,
    name text,
    url text,
    builtin integer DEFAULT 0 NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: rules; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rules (
    key text NOT NULL,
    name text,
    type text NOT NULL,
    definition text NOT NULL,
    execution_order integer NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Name: rules_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rules_version (
    id integer NOT NULL,
    version integer NOT NULL
);


--
-- Name: subject_key_wraps; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.subject_key_wraps (
    subject_key_id text NOT NULL,
    encryption_key_id text NOT NULL,
    wrapped_key bytea NOT NULL,
    created_date text NOT NULL
);


--
-- Name: subject_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.subject_keys (
    id text NOT NULL,
    entity_id text NOT NULL,
    encryption_key_id text NOT NULL,
    wrapped_key bytea NOT NULL,
    created_date text NOT NULL
);


--
-- Name: tags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tags (
    name text NOT NULL,
    created_date text NOT NULL,
    modified_date text NOT NULL
);


--
-- Data for Name: activity_log; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.activity_log VALUES (1, '6aa57fae-02c8-4b22-b80b-1d7cecf352ff', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u1', '01a227c1-ab80-7000-bea7-4ca442b45677', 'EMAIL', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.527Z', NULL, '563ab5e7d0ea3da1280b9b7d4286da8a75e26921fe131579001698aa8b2446d4');
INSERT INTO public.activity_log VALUES (2, 'a498d6f9-b40c-475d-bede-d714a1ea7709', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u1', '01a227c1-ab81-7000-92b9-180d3904ba94', 'NAME', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.527Z', NULL, '12cdb12d85567a4a595bf23766c6d81a0954aeaf21346f52e683f88d3f1a8595');
INSERT INTO public.activity_log VALUES (3, '8591b097-29a5-4661-b7ec-751d2da55dfd', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u1', '01a227c1-ab81-7003-b874-d7528b75680e', 'AGE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.527Z', NULL, '8b171655e1d30d418ecd63164d5bacd1aa530031cbebd2fac51f11b3102a18a9');
INSERT INTO public.activity_log VALUES (4, '58226937-7074-4e9f-85e8-1ee3d5b0010c', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u1', '01a227c1-ab82-7000-9aed-d887f56c43e6', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.527Z', NULL, '5232c4b95215b49154c11f1f9d2e890b70718b6d917454828067e7cd951f489d');
INSERT INTO public.activity_log VALUES (5, '61b02506-d025-45e9-82a5-68d2b3987e1b', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u1', '01a227c1-ab82-7001-b776-79ac59dc24f6', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.527Z', NULL, '205d82f459f528934a3df1ccc54d0f91ef16d6372d204d5fe7ea09c18254841b');
INSERT INTO public.activity_log VALUES (6, 'b4be40e8-baf5-4c35-ac76-c88f192bf5ea', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u2', '01a227c1-abe9-7000-82d1-623eae42eca2', 'EMAIL', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.622Z', NULL, '011a451abadd3ddd65fc20368f3f34a77cae9c05a7183eb870fc81e4bb2fda28');
INSERT INTO public.activity_log VALUES (7, 'a44156b7-05a2-4825-b3e1-f956583d5e82', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u2', '01a227c1-abe9-7001-a9c6-3f0b2a44b2ec', 'NAME', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.622Z', NULL, 'bb243012bbfcd480ac741f9b8479b60ecfb8435e4c30a3628bc74ceb4e7222d4');
INSERT INTO public.activity_log VALUES (8, '2858fb52-affe-4236-b2ed-48640bdd8946', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u2', '01a227c1-abe9-7004-a4cc-a9a73865e88f', 'AGE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.622Z', NULL, '237effaf92f4d068fc8d3b74f4383d47bbbfe8d1382959aec10fb4d99d65139c');
INSERT INTO public.activity_log VALUES (9, '0cb6c384-898d-48f7-88d9-2752c6b8d315', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u2', '01a227c1-abe9-7005-9d78-86d02977b14b', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.622Z', NULL, '238ee9a23251569de9253d099807eb27ea985e8242789d669ae0897abc777cc6');
INSERT INTO public.activity_log VALUES (10, 'dc5a6a60-ee6a-45ce-a734-1d5f5469fb27', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u2', '01a227c1-abea-7000-ba60-6a67b804c163', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.622Z', NULL, 'c630c112b3a8f0ef6ceb5f133f52a88b38fb05021af499e66a22562403d24b0e');
INSERT INTO public.activity_log VALUES (11, 'c4ab1579-2758-4051-9315-74a48f09e18f', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u3', '01a227c1-ac39-7000-b720-61b7a394e7ac', 'EMAIL', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.683Z', '2026-11-29T14:42:13.699Z', NULL, '6763e6702460b320b174c1e6b01a6ffd54d19b7499dbcb4a14df074f51604b65');
INSERT INTO public.activity_log VALUES (12, '243ccff3-76b5-4388-8c6d-2e822cd19f27', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u3', '01a227c1-ac39-7001-959e-a46762ba5bb7', 'NAME', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.683Z', '2026-11-29T14:42:13.699Z', NULL, 'e1be43c5801958a7c8323e4f3665ff6c011cb164f627f092feac2e6f3121f52a');
INSERT INTO public.activity_log VALUES (13, 'f47656ac-e623-49d1-98a5-72aaf373d1e4', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u3', '01a227c1-ac39-7004-a62e-99dca06c4281', 'AGE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.683Z', '2026-11-29T14:42:13.699Z', NULL, '1ea350dbfceccb84e61af697f96cbfc2c0505cdd4158f5d4979c58b4f257b94b');
INSERT INTO public.activity_log VALUES (14, '2dda69e5-3aef-48b5-a634-b498593c53fa', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u3', '01a227c1-ac3a-7000-9f84-6109f94b983b', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.683Z', '2026-11-29T14:42:13.699Z', NULL, 'b946f0044537025d42766c50862eea096bf9a7ee6ceff4c966796552ab4a7b20');
INSERT INTO public.activity_log VALUES (15, '382c1eb9-d8aa-4291-a156-3bdd8c2ccb97', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'u3', '01a227c1-ac3a-7001-8211-598a6f69a553', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, 'GB', NULL, NULL, 0, '2026-11-29T14:42:13.683Z', '2026-11-29T14:42:13.699Z', NULL, '46de29be98dd42f4f94e3c5ae0625a9dbb3fea2f8aa9a9a516d9b065b3c7a5b6');
INSERT INTO public.activity_log VALUES (16, 'e9caf01f-bccb-4eed-9961-37dc372e5eef', '81444e5b-a91d-4a21-9033-81c092ae194c', 'READ', 'u1', '01a227c1-ab80-7000-bea7-4ca442b45677', 'EMAIL', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:13.771Z', '2026-11-29T14:42:13.787Z', NULL, 'ba894f8d2beb85616310ccd1393f53cc86ce69ffb7592b7f32d94d220f1d3a55');
INSERT INTO public.activity_log VALUES (17, '164cf630-7803-49af-82bf-278d96f3b8f4', '81444e5b-a91d-4a21-9033-81c092ae194c', 'READ', 'u1', '01a227c1-ab81-7000-92b9-180d3904ba94', 'NAME', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:13.771Z', '2026-11-29T14:42:13.787Z', NULL, '6f8b37a6a0ba06cf990a250cf23e51b9da0fc12ce07837b96d9ba3cabdf92cde');
INSERT INTO public.activity_log VALUES (18, '0a035e3a-08b2-42c9-a518-d1966d76a9e3', '81444e5b-a91d-4a21-9033-81c092ae194c', 'READ', 'u1', '01a227c1-ab81-7003-b874-d7528b75680e', 'AGE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:13.771Z', '2026-11-29T14:42:13.787Z', NULL, 'abbcd10242de3b7f9fe6d0c8a6007e32da1a2d657824c99f7766601c35b864fb');
INSERT INTO public.activity_log VALUES (19, '4f56a17f-9b38-4dfe-b947-29274f801cbf', '81444e5b-a91d-4a21-9033-81c092ae194c', 'READ', 'u1', '01a227c1-ab82-7000-9aed-d887f56c43e6', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:13.771Z', '2026-11-29T14:42:13.787Z', NULL, 'd55447f60a2d3ec00b76a67f379dfb2218fe0af7237806e78bc80c4a548c4df4');
INSERT INTO public.activity_log VALUES (20, '843402ad-44c3-4593-ac69-b56809bcfe09', '81444e5b-a91d-4a21-9033-81c092ae194c', 'READ', 'u1', '01a227c1-ab82-7001-b776-79ac59dc24f6', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:13.771Z', '2026-11-29T14:42:13.787Z', NULL, 'eb086b3683224b5d0b26357860b408fc5066a1c96ea07b8ca484ba8ded416bbb');
INSERT INTO public.activity_log VALUES (21, 'a2d31367-3f9b-4951-80e6-9fb472c156d1', '81444e5b-a91d-4a21-9033-81c092ae194c', 'READ', 'u1', '01a227c1-ab80-7000-bea7-4ca442b45677', 'EMAIL', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:13.843Z', '2026-11-29T14:42:13.859Z', NULL, '994f89b7cfc3445c421e91ba6f5478cb2523bc9f0691e67da9defec166e466ea');
INSERT INTO public.activity_log VALUES (22, '1033ead1-96c2-4faa-8c44-68b0faf3c06b', '701ce091-c4fa-4c9b-b0cd-783862a1ac49', 'READ', 'u2', '01a227c1-abe9-7000-82d1-623eae42eca2', 'EMAIL', '701ce091-c4fa-4c9b-b0cd-783862a1ac49', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:13.889Z', '2026-11-29T14:42:13.896Z', NULL, '4a760a4ec4ca61bc35cbc7d87071f13023b6347291297336cf5fa9c97b890588');
INSERT INTO public.activity_log VALUES (23, 'crm-1', '81444e5b-a91d-4a21-9033-81c092ae194c', 'STORE', 'cust-1', 'crm/cust-1/email', 'EMAIL', 'crm', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, '2026-11-29T14:42:14.015Z', '2026-11-29T14:42:14.082Z', '{"eventType":"STORE","dataPointId":"crm/cust-1/email","subjectId":"cust-1","attribute":"EMAIL"}', '45f0a5da3399cb8db0410b0270d1afa2d8d3a34970bd4728aadfc3e618aaa214');
INSERT INTO public.activity_log VALUES (24, 'crm-2', '81444e5b-a91d-4a21-9033-81c092ae194c', 'READ', 'cust-1', 'crm/cust-1/email', 'EMAIL', 'crm', 'alice', NULL, NULL, NULL, NULL, NULL, NULL, 1, '2026-11-29T14:42:14.127Z', '2026-11-29T14:42:14.217Z', '{"eventType":"READ","dataPointId":"crm/cust-1/email","subjectId":"cust-1","attribute":"EMAIL"}', '2bfd00807039ab93900fa765fd31eb4939eee3a164c881bdf3e4a1094e258941');
INSERT INTO public.activity_log VALUES (25, 'crm-3', '81444e5b-a91d-4a21-9033-81c092ae194c', 'DELETE', 'cust-1', 'crm/cust-1/email', 'EMAIL', 'crm', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, '2026-11-29T14:42:14.127Z', '2026-11-29T14:42:14.217Z', '{"eventType":"DELETE","dataPointId":"crm/cust-1/email","subjectId":"cust-1","attribute":"EMAIL"}', '52b37596962f56d3447657691ce5740f8b20facd26ce692b39c3b476b83b4087');
INSERT INTO public.activity_log VALUES (26, '47786ca0-5a26-4c1e-8f51-5cc8bb853cef', '81444e5b-a91d-4a21-9033-81c092ae194c', 'READ', 'u3', '01a227c1-ac3a-7000-9f84-6109f94b983b', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:14.261Z', '2026-11-29T14:42:14.265Z', NULL, '3d1b1c24684a74df862890308221d4a1f7339f3deeb9b4f85d63f0830388f8c8');
INSERT INTO public.activity_log VALUES (27, '52ae017a-5047-4080-bc90-d9906d95d1ee', '81444e5b-a91d-4a21-9033-81c092ae194c', 'READ', 'u3', '01a227c1-ac3a-7001-8211-598a6f69a553', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:14.261Z', '2026-11-29T14:42:14.265Z', NULL, '2924886718a19c47eaa13ab7911e137b598d84949e6f45947bb50b425c8a66e4');
INSERT INTO public.activity_log VALUES (28, '4e0dc7c4-4f90-4d81-a4a6-c7631d5e8a86', '81444e5b-a91d-4a21-9033-81c092ae194c', 'DELETE', 'u3', '01a227c1-ac3a-7000-9f84-6109f94b983b', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:14.313Z', '2026-11-29T14:42:14.314Z', NULL, 'e5864c6f345c28509b8d891f33b44bf3d53d065d2af9dd495edf664fc8e2f6c3');
INSERT INTO public.activity_log VALUES (29, '73bbb91a-bf15-4edc-875b-69feb40c530e', '81444e5b-a91d-4a21-9033-81c092ae194c', 'DELETE', 'u3', '01a227c1-ac39-7000-b720-61b7a394e7ac', 'EMAIL', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:14.351Z', '2026-11-29T14:42:14.352Z', NULL, '7751e37f4132b4a9207d7d20ff5c731d0b2c099df5be882ca641999d22775b1b');
INSERT INTO public.activity_log VALUES (30, '0563779e-241b-4a44-ba90-6da0e7497955', '81444e5b-a91d-4a21-9033-81c092ae194c', 'DELETE', 'u3', '01a227c1-ac39-7001-959e-a46762ba5bb7', 'NAME', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:14.351Z', '2026-11-29T14:42:14.352Z', NULL, '1963b87e49bf0e7c3ecda6f198cfac6c0d6b7de1ddf3fb5aa141acc2f14614da');
INSERT INTO public.activity_log VALUES (31, '5e5a408d-bf53-4f05-9e0b-edeee9274bac', '81444e5b-a91d-4a21-9033-81c092ae194c', 'DELETE', 'u3', '01a227c1-ac39-7004-a62e-99dca06c4281', 'AGE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:14.351Z', '2026-11-29T14:42:14.352Z', NULL, 'e4a2049397c376c77c199050e95c3e2f38e2988294a513bf9cec53447646ba3e');
INSERT INTO public.activity_log VALUES (32, 'e54e7dfc-2f9e-4e34-92f3-7cee181aaa04', '81444e5b-a91d-4a21-9033-81c092ae194c', 'DELETE', 'u3', '01a227c1-ac3a-7001-8211-598a6f69a553', 'NOTE', '81444e5b-a91d-4a21-9033-81c092ae194c', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, '2026-11-29T14:42:14.351Z', '2026-11-29T14:42:14.352Z', NULL, 'c8a80f0a9acc714d3dca7ca088b1054e32d561006ff4689e4a2e9a8629e1146f');


--
-- Data for Name: alerts; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: applications; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.applications VALUES ('81444e5b-a91d-4a21-9033-81c092ae194c', 'admin', '1b3af7d2f1f3428ee7d76d5be730b93565efcf2ecbb7819caf9002bca23d4545', '["*"]', 1, '2026-11-29T14:42:09.948Z', '2026-11-29T14:42:09.948Z');
INSERT INTO public.applications VALUES ('701ce091-c4fa-4c9b-b0cd-783862a1ac49', 'billing', '2e0069a6d473cb8444b2f0c758354a65543b67193b9f252380dacf5ca480926e', '["EMAIL"]', 0, '2026-11-29T14:42:13.241Z', '2026-11-29T14:42:13.241Z');


--
-- Data for Name: attribute_definitions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.attribute_definitions VALUES ('EMAIL', NULL, NULL, '"string"', 0, 1, 0, '2026-11-29T14:42:12.803Z', '2026-11-29T14:42:12.803Z');
INSERT INTO public.attribute_definitions VALUES ('NAME', NULL, NULL, '{"first":"string","last":"string"}', 0, 1, 0, '2026-11-29T14:42:12.938Z', '2026-11-29T14:42:12.938Z');
INSERT INTO public.attribute_definitions VALUES ('AGE', NULL, NULL, '"int"', 0, 0, 0, '2026-11-29T14:42:13.076Z', '2026-11-29T14:42:13.076Z');
INSERT INTO public.attribute_definitions VALUES ('NOTE', NULL, NULL, '"string"', 1, 0, 0, '2026-11-29T14:42:13.156Z', '2026-11-29T14:42:13.156Z');


--
-- Data for Name: datapoint_regulations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.datapoint_regulations VALUES ('01a227c1-ab80-7000-bea7-4ca442b45677', 'GDPR');
INSERT INTO public.datapoint_regulations VALUES ('01a227c1-abe9-7000-82d1-623eae42eca2', 'GDPR');


--
-- Data for Name: datapoint_tags; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.datapoint_tags VALUES ('01a227c1-ab80-7000-bea7-4ca442b45677', 'pii');
INSERT INTO public.datapoint_tags VALUES ('01a227c1-ab80-7000-bea7-4ca442b45677', 'mailed');
INSERT INTO public.datapoint_tags VALUES ('01a227c1-abe9-7000-82d1-623eae42eca2', 'pii');
INSERT INTO public.datapoint_tags VALUES ('01a227c1-abe9-7000-82d1-623eae42eca2', 'mailed');


--
-- Data for Name: datapoints; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.datapoints VALUES ('01a227c1-ab80-7000-bea7-4ca442b45677', 'u1', 'EMAIL', 'EMAIL', NULL, 0, 'NORMAL', 'd547b049-98e9-4114-abd0-5e09fe27dbb4', '\x01dfd9e71a959f7f825d4c2886d622751f76b893f0ddeb71ad590432d8c9319130cca1d6da72471dce526073e7', 'Ag9YFFj0woR_t7YS_MKG4JX91oWIrWUSjP7BKNpeAhw', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.499Z');
INSERT INTO public.datapoints VALUES ('01a227c1-ab81-7000-92b9-180d3904ba94', 'u1', 'NAME', 'NAME', NULL, 0, 'NORMAL', 'd547b049-98e9-4114-abd0-5e09fe27dbb4', '\x013dccc8c678634506df56d2b2b89fd08e195cdce763c3c71e6f70bf028cf60367ffafbc1bcc03855d822b636dcd126e5843ab1f6c86182a', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.499Z');
INSERT INTO public.datapoints VALUES ('01a227c1-ab81-7001-9949-280e3c704b1d', 'u1', 'NAME.first', 'NAME', '01a227c1-ab81-7000-92b9-180d3904ba94', 0, 'NORMAL', 'd547b049-98e9-4114-abd0-5e09fe27dbb4', '\x012d5991576df79f038c1ed75e03be36545ed73f2cf9d9e5e2b65cd32514a2fa5ea7', 'sFlHooPO3I_lR_cfvInEjATRZkO_FiWBHaQxpGBuxyQ', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.499Z');
INSERT INTO public.datapoints VALUES ('01a227c1-ab81-7002-b128-2e80d1eebd73', 'u1', 'NAME.last', 'NAME', '01a227c1-ab81-7000-92b9-180d3904ba94', 0, 'NORMAL', 'd547b049-98e9-4114-abd0-5e09fe27dbb4', '\x013313ac5187b5f31e76c7af1f330b53bc14a7afc452d65014486e8e08c5266985', 'C-awtNaxN8WeszQmHIjAZMNvvv817Fe5T8-5IvJkyoc', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.499Z');
INSERT INTO public.datapoints VALUES ('01a227c1-ab81-7003-b874-d7528b75680e', 'u1', 'AGE', 'AGE', NULL, 0, 'NORMAL', 'd547b049-98e9-4114-abd0-5e09fe27dbb4', '\x0188f06c26f30774b93098fd77fbfee0bde5ac2a03b9b01073e6cf9e1a424c', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.499Z');
INSERT INTO public.datapoints VALUES ('01a227c1-ab82-7000-9aed-d887f56c43e6', 'u1', 'NOTE', 'NOTE', NULL, 0, 'NORMAL', 'd547b049-98e9-4114-abd0-5e09fe27dbb4', '\x019384992c1717f2252da3e7514d785088bab755d7df0dfc12e13ef3fa6a742c79', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.499Z');
INSERT INTO public.datapoints VALUES ('01a227c1-ab82-7001-b776-79ac59dc24f6', 'u1', 'NOTE', 'NOTE', NULL, 0, 'NORMAL', 'd547b049-98e9-4114-abd0-5e09fe27dbb4', '\x01133aa923f844c2eeff74e0b1b3442e2cdba9a6af5bac6de665b33031ab00fd71', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.499Z', '2026-11-29T14:42:13.499Z');
INSERT INTO public.datapoints VALUES ('01a227c1-abe9-7000-82d1-623eae42eca2', 'u2', 'EMAIL', 'EMAIL', NULL, 0, 'NORMAL', '14ba3fcb-22ad-4ee7-b817-b7e83bf5e4d1', '\x0100fa7f2cdadbe219c6fbffe9bd6d0496f8ed59d141ab105e058cbea8ebf78b0702ee26e9a04018f44fec679d', 'Ld9y_d25GTAn4ojirIacYjYcAwSp4lZ0jzHkuQIMR2k', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.607Z');
INSERT INTO public.datapoints VALUES ('01a227c1-abe9-7001-a9c6-3f0b2a44b2ec', 'u2', 'NAME', 'NAME', NULL, 0, 'NORMAL', '14ba3fcb-22ad-4ee7-b817-b7e83bf5e4d1', '\x01df8fd7b7d99b623979344824ba039e67cc290dc4fbc7506fbef14fd8bc29bdc8e1962f22817e4f0ef92ab60b5b1f706fdfb8c7457c20bc', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.607Z');
INSERT INTO public.datapoints VALUES ('01a227c1-abe9-7002-8788-babeb4fd02db', 'u2', 'NAME.first', 'NAME', '01a227c1-abe9-7001-a9c6-3f0b2a44b2ec', 0, 'NORMAL', '14ba3fcb-22ad-4ee7-b817-b7e83bf5e4d1', '\x01d88d3af252eae7770df6378034d99e607d2bc74092c161a54c5132063872006df0', 'sFlHooPO3I_lR_cfvInEjATRZkO_FiWBHaQxpGBuxyQ', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.607Z');
INSERT INTO public.datapoints VALUES ('01a227c1-abe9-7003-b4ec-613a64e97b40', 'u2', 'NAME.last', 'NAME', '01a227c1-abe9-7001-a9c6-3f0b2a44b2ec', 0, 'NORMAL', '14ba3fcb-22ad-4ee7-b817-b7e83bf5e4d1', '\x0139942226fb71a0609d547d78e76690f987685b5d76e800ba075c03a8800a6a22', 'Yja39ObOBkwHLrCVyxRPeXefFk1yoReHIXKvG4o45mk', 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.607Z');
INSERT INTO public.datapoints VALUES ('01a227c1-abe9-7004-a4cc-a9a73865e88f', 'u2', 'AGE', 'AGE', NULL, 0, 'NORMAL', '14ba3fcb-22ad-4ee7-b817-b7e83bf5e4d1', '\x0144442627e328246090fb3d0146041b0e4cfa35df0a63e7debb8458f045f3', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.607Z');
INSERT INTO public.datapoints VALUES ('01a227c1-abe9-7005-9d78-86d02977b14b', 'u2', 'NOTE', 'NOTE', NULL, 0, 'NORMAL', '14ba3fcb-22ad-4ee7-b817-b7e83bf5e4d1', '\x0166c621b3e24dcd375c565ca1fef0b2b958109c863c9efa1ab8d3a55d63ccedc7', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.607Z');
INSERT INTO public.datapoints VALUES ('01a227c1-abea-7000-ba60-6a67b804c163', 'u2', 'NOTE', 'NOTE', NULL, 0, 'NORMAL', '14ba3fcb-22ad-4ee7-b817-b7e83bf5e4d1', '\x01d493db524482ef1e3c8fbcdf200e152a6d1b6366688d93627e118adad6a562ef', NULL, 'GB', NULL, NULL, NULL, 0, '2026-11-29T14:42:13.607Z', '2026-11-29T14:42:13.607Z');


--
-- Data for Name: definition_entity_types; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: definition_regulations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.definition_regulations VALUES ('EMAIL', 'GDPR');


--
-- Data for Name: definition_tags; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.definition_tags VALUES ('EMAIL', 'pii');


--
-- Data for Name: encryption_keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.encryption_keys VALUES ('b94367a1c5c3442044246935a7cc480d5db50771e5ce83963a495bac7705b36d', '-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvp5GC3ALqsduAZc+6UNk
rUtCPbYkB/nHPAWe5DGNx1so//u7ZlICYVdUIn1bBxsID4irSxezInhb8QTzg55q
pWMXNKO213zFFHIk17X+TIqO6iBU1NFEF2KFDJDCnAEc1PwPXVU6mvwinxDgVtLL
wXkhruoibOPZBSJ1z1G12fnh1S4cc7w8no8Ig3j4b4Wj87cw847ZEpLiXF4LC0i4
kGFQEpxuFzXvGpvKEa7V3EpAejzDsAQrTnOjUhkpUTiXlkZ8i4SKfoPOaeMP1khZ
GbPBHJ3F0lB2Dkb6zI3cQ7ApBtOa3e9+AViNOtTy10XuBWlVQs5yFIubIsLvdsIO
ewIDAQAB
-----END PUBLIC KEY-----
', 'active', '2026-11-29T14:42:09.966Z');


--
-- Data for Name: entities; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.entities VALUES ('u1', 'datasubject', 0, '2026-11-29T14:42:13.479Z', '2026-11-29T14:42:13.479Z');
INSERT INTO public.entities VALUES ('u2', 'datasubject', 0, '2026-11-29T14:42:13.589Z', '2026-11-29T14:42:13.589Z');
INSERT INTO public.entities VALUES ('cust-1', 'datasubject', 0, '2026-11-29T14:42:14.063Z', '2026-11-29T14:42:14.063Z');


--
-- Data for Name: entity_prohibitions; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: entity_tags; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: entity_types; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.entity_types VALUES ('datasubject', 'Data subject', 'A person the data is about', 1, '2026-11-29T14:42:09.902Z', '2026-11-29T14:42:09.902Z');


--
-- Data for Name: idle_retention; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: kysely_migration; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.kysely_migration VALUES ('0001_registry', '2026-11-29T14:42:09.627Z');
INSERT INTO public.kysely_migration VALUES ('0002_activity', '2026-11-29T14:42:09.713Z');
INSERT INTO public.kysely_migration VALUES ('0003_rules', '2026-11-29T14:42:09.831Z');
INSERT INTO public.kysely_migration VALUES ('0004_dataplane', '2026-11-29T14:42:09.852Z');
INSERT INTO public.kysely_migration VALUES ('0005_key_rotation', '2026-11-29T14:42:09.887Z');


--
-- Data for Name: kysely_migration_lock; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.kysely_migration_lock VALUES ('migration_lock', 0);


--
-- Data for Name: regulations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.regulations VALUES ('GDPR', 'General Data Protection Regulation', 'https://eur-lex.europa.eu/eli/reg/2016/679/oj', 1, '2026-11-29T14:42:09.911Z', '2026-11-29T14:42:09.911Z');
INSERT INTO public.regulations VALUES ('CCPA', 'California Consumer Privacy Act', 'https://oag.ca.gov/privacy/ccpa', 1, '2026-11-29T14:42:09.911Z', '2026-11-29T14:42:09.911Z');
INSERT INTO public.regulations VALUES ('HIPAA', 'Health Insurance Portability and Accountability Act', 'https://www.hhs.gov/hipaa/index.html', 1, '2026-11-29T14:42:09.911Z', '2026-11-29T14:42:09.911Z');
INSERT INTO public.regulations VALUES ('PCI_DSS', 'Payment Card Industry Data Security Standard', 'https://www.pcisecuritystandards.org/', 1, '2026-11-29T14:42:09.911Z', '2026-11-29T14:42:09.911Z');
INSERT INTO public.regulations VALUES ('COPPA', 'Children''s Online Privacy Protection Act', 'https://www.ftc.gov/legal-library/browse/rules/childrens-online-privacy-protection-rule-coppa', 1, '2026-11-29T14:42:09.911Z', '2026-11-29T14:42:09.911Z');
INSERT INTO public.regulations VALUES ('LGPD', 'Lei Geral de Proteção de Dados Pessoais', 'https://www.planalto.gov.br/ccivil_03/_ato2015-2018/2018/lei/l13709.htm', 1, '2026-11-29T14:42:09.911Z', '2026-11-29T14:42:09.911Z');
INSERT INTO public.regulations VALUES ('PIPEDA', 'Personal Information Protection and Electronic Documents Act', 'https://www.priv.gc.ca/en/privacy-topics/privacy-laws-in-canada/the-personal-information-protection-and-electronic-documents-act-pipeda/', 1, '2026-11-29T14:42:09.911Z', '2026-11-29T14:42:09.911Z');


--
-- Data for Name: rules; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rules VALUES ('email-tag', NULL, 'data', '{"key":"email-tag","type":"data","constraint":{"type":"attribute","operator":"any","attributes":["EMAIL"]},"action":{"type":"tag","tag":"mailed"}}', 1, '2026-11-29T14:42:13.388Z', '2026-11-29T14:42:13.388Z');


--
-- Data for Name: rules_version; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rules_version VALUES (1, 1);


--
-- Data for Name: subject_key_wraps; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: subject_keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.subject_keys VALUES ('d547b049-98e9-4114-abd0-5e09fe27dbb4', 'u1', 'b94367a1c5c3442044246935a7cc480d5db50771e5ce83963a495bac7705b36d', '\x38098a0aa0911b6ad29ecc91b4f56e9af794bfb7deeee3271a2a2c4eb02fa6c6a08b3a18ed4d988201311ee66a757c47b142311011eebaeb7c2d5e5d3731b394f5d5dc2957a257f10b22f0dfee300643cc8f4dcddd477ae53a1e28a094bf5c9114c23ca552510ac27225420e1a0f31fc21cea68365c4048e10f481966e6363724e049ff1d0ef82409a23c1bd54ba02c552565471d2888579f6507ced17ce0a5dcdad2eaf7253a652635aee66164cdc4e1505b2419363185bcbf1b1d86eb823e6316735988873d1f8354ee05e4ca603a29ae7b1ed2efb74de340face59a65b2acf587983363dbbb3ccf6e4774f8f53d434ac5db32b4f0a847d24d2d74bb559dcb', '2026-11-29T14:42:13.499Z');
INSERT INTO public.subject_keys VALUES ('14ba3fcb-22ad-4ee7-b817-b7e83bf5e4d1', 'u2', 'b94367a1c5c3442044246935a7cc480d5db50771e5ce83963a495bac7705b36d', '\x240274de0d359a89acc03ffd61f6e301f1cc0037b9338782e48329d535ade1d3475bfe356eb54c8a375441d62d72cd6cc235e82e91bcba1b7b5d711c7af7f1db77331379cab951dd01bcda2f9671ae1e9a574590b38eb5ce1db57f9653ddffb2cec5e01e9ca36562c0ed32c49d937d22acce30fc92e684f59d9b9ba1137b1d85eb653410a9795580aef93c6aeb2aec7d871618890b72e8d49d016e29d7d9e0f00c58743e527fc164e961a93eaa4170f3f714e31769a8f8b68cafd153d7b6bbf975496a789150dfcaafb374e8833e9664d26dc6bce43d8b02ff409ed518dbe8ff8c3427e21de8a0975f1de9fd5effe9f88c64ad4f26809991fce0403c97b2b78e', '2026-11-29T14:42:13.607Z');


--
-- Data for Name: tags; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.tags VALUES ('pii', '2026-11-29T14:42:12.807Z', '2026-11-29T14:42:12.807Z');
INSERT INTO public.tags VALUES ('mailed', '2026-11-29T14:42:13.351Z', '2026-11-29T14:42:13.351Z');


--
-- Name: activity_log activity_log_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activity_log
    ADD CONSTRAINT activity_log_pkey PRIMARY KEY (sequence);


--
-- Name: alerts alerts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alerts
    ADD CONSTRAINT alerts_pkey PRIMARY KEY (id);


--
-- Name: applications applications_api_key_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.applications
    ADD CONSTRAINT applications_api_key_hash_key UNIQUE (api_key_hash);


--
-- Name: applications applications_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.applications
    ADD CONSTRAINT applications_pkey PRIMARY KEY (id);


--
-- Name: attribute_definitions attribute_definitions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.attribute_definitions
    ADD CONSTRAINT attribute_definitions_pkey PRIMARY KEY (key);


--
-- Name: datapoint_regulations datapoint_regulations_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.datapoint_regulations
    ADD CONSTRAINT datapoint_regulations_pk PRIMARY KEY (datapoint_id, regulation);


--
-- Name: datapoint_tags datapoint_tags_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.datapoint_tags
    ADD CONSTRAINT datapoint_tags_pk PRIMARY KEY (datapoint_id, tag);


--
-- Name: datapoints datapoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.datapoints
    ADD CONSTRAINT datapoints_pkey PRIMARY KEY (id);


--
-- Name: definition_entity_types definition_entity_types_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.definition_entity_types
    ADD CONSTRAINT definition_entity_types_pk PRIMARY KEY (definition_key, entity_type);


--
-- Name: definition_regulations definition_regulations_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.definition_regulations
    ADD CONSTRAINT definition_regulations_pk PRIMARY KEY (definition_key, regulation);


--
-- Name: definition_tags definition_tags_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.definition_tags
    ADD CONSTRAINT definition_tags_pk PRIMARY KEY (definition_key, tag);


--
-- Name: encryption_keys encryption_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.encryption_keys
    ADD CONSTRAINT encryption_keys_pkey PRIMARY KEY (id);


--
-- Name: entities entities_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.entities
    ADD CONSTRAINT entities_pkey PRIMARY KEY (id);


--
-- Name: entity_prohibitions entity_prohibitions_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.entity_prohibitions
    ADD CONSTRAINT entity_prohibitions_pk PRIMARY KEY (entity_id, operation);


--
-- Name: entity_tags entity_tags_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.entity_tags
    ADD CONSTRAINT entity_tags_pk PRIMARY KEY (entity_id, tag);


--
-- Name: entity_types entity_types_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.entity_types
    ADD CONSTRAINT entity_types_pkey PRIMARY KEY (key);


--
-- Name: idle_retention idle_retention_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idle_retention
    ADD CONSTRAINT idle_retention_pk PRIMARY KEY (entity_id, definition_key);


--
-- Name: kysely_migration_lock kysely_migration_lock_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.kysely_migration_lock
    ADD CONSTRAINT kysely_migration_lock_pkey PRIMARY KEY (id);


--
-- Name: kysely_migration kysely_migration_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.kysely_migration
    ADD CONSTRAINT kysely_migration_pkey PRIMARY KEY (name);


--
-- Name: regulations regulations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.regulations
    ADD CONSTRAINT regulations_pkey PRIMARY KEY (key);


--
-- Name: rules rules_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rules
    ADD CONSTRAINT rules_pkey PRIMARY KEY (key);


--
-- Name: rules_version rules_version_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rules_version
    ADD CONSTRAINT rules_version_pkey PRIMARY KEY (id);


--
-- Name: subject_key_wraps subject_key_wraps_pk; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.subject_key_wraps
    ADD CONSTRAINT subject_key_wraps_pk PRIMARY KEY (subject_key_id, encryption_key_id);


--
-- Name: subject_keys subject_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.subject_keys
    ADD CONSTRAINT subject_keys_pkey PRIMARY KEY (id);


--
-- Name: tags tags_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tags
    ADD CONSTRAINT tags_pkey PRIMARY KEY (name);


--
-- Name: activity_log_by_application; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_log_by_application ON public.activity_log USING btree (application_id, sequence);


--
-- Name: activity_log_by_point; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_log_by_point ON public.activity_log USING btree (data_point_id, sequence);


--
-- Name: activity_log_by_subject; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_log_by_subject ON public.activity_log USING btree (subject_id, sequence);


--
-- Name: activity_log_by_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX activity_log_by_time ON public.activity_log USING btree (event_time, sequence);


--
-- Name: activity_log_event; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX activity_log_event ON public.activity_log USING btree (recorded_by, event_id);


--
-- Name: alerts_by_rule; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX alerts_by_rule ON public.alerts USING btree (rule_key, created_date);


--
-- Name: alerts_by_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX alerts_by_time ON public.alerts USING btree (created_date, id);


--
-- Name: datapoint_regulations_by_regulation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoint_regulations_by_regulation ON public.datapoint_regulations USING btree (regulation);


--
-- Name: datapoint_tags_by_tag; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoint_tags_by_tag ON public.datapoint_tags USING btree (tag);


--
-- Name: datapoints_by_attribute; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_attribute ON public.datapoints USING btree (attribute, created_date, id);


--
-- Name: datapoints_by_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_created ON public.datapoints USING btree (created_date, id);


--
-- Name: datapoints_by_definition; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_definition ON public.datapoints USING btree (definition_key);


--
-- Name: datapoints_by_entity; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_entity ON public.datapoints USING btree (entity_id, definition_key);


--
-- Name: datapoints_by_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_expiry ON public.datapoints USING btree (expires_at);


--
-- Name: datapoints_by_modified; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_modified ON public.datapoints USING btree (modified_date, id);


--
-- Name: datapoints_by_root; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_root ON public.datapoints USING btree (structure_root_id);


--
-- Name: datapoints_by_value; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX datapoints_by_value ON public.datapoints USING btree (attribute, blind_index, created_date, id);


--
-- Name: definition_entity_types_by_entity_type; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX definition_entity_types_by_entity_type ON public.definition_entity_types USING btree (entity_type);


--
-- Name: definition_regulations_by_regulation; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX definition_regulations_by_regulation ON public.definition_regulations USING btree (regulation);


--
-- Name: definition_tags_by_tag; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX definition_tags_by_tag ON public.definition_tags USING btree (tag);


--
-- Name: entities_by_type; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX entities_by_type ON public.entities USING btree (type, created_date);


--
-- Name: entity_tags_by_tag; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX entity_tags_by_tag ON public.entity_tags USING btree (tag);


--
-- Name: idle_retention_by_check; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX idle_retention_by_check ON public.idle_retention USING btree (next_check);


--
-- Name: rules_by_name; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rules_by_name ON public.rules USING btree (name);


--
-- Name: subject_key_wraps_by_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX subject_key_wraps_by_key ON public.subject_key_wraps USING btree (encryption_key_id);


--
-- Name: subject_keys_by_entity; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX subject_keys_by_entity ON public.subject_keys USING btree (entity_id);


--
-- Name: activity_log activity_log_no_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER activity_log_no_update BEFORE DELETE OR UPDATE ON public.activity_log FOR EACH ROW EXECUTE FUNCTION public.activity_log_append_only();


--
-- PostgreSQL database dump complete
--


